import Foundation
import NotificationBus

/// What the `for await` loop itself saw, in-band.
package struct OverloadConsumed: Codable, Sendable, Equatable {
    /// Notifications handled.
    package var notifications: UInt64 = 0
    /// Payload bytes handled, and notifications whose payload had the wrong size.
    package var payloadBytes: UInt64 = 0
    package var badSize: UInt64 = 0
    /// Notifications whose sequence was not above the previous one's.
    package var outOfOrder: UInt64 = 0
    /// The first notification's sequence (1 when nothing was lost before it).
    package var firstSequence: UInt64 = 0
    /// The highest sequence accounted for in-band: a notification's, or the end of a gap's range.
    package var highestSequence: UInt64 = 0
    /// `.gap(.lostUpstream)` events and the notifications they report.
    package var upstreamGapEvents: UInt64 = 0
    package var upstreamLost: UInt64 = 0
    /// `.gap(.droppedLocalBuffer)` events and the notifications they report.
    package var localGapEvents: UInt64 = 0
    package var localDropped: UInt64 = 0
    /// Gaps of any other cause (none expected).
    package var otherLost: UInt64 = 0
    /// Monotonic times of the first and the last event handled, ns.
    package var firstAt: UInt64 = 0
    package var lastAt: UInt64 = 0
    /// Handler checksum (keeps the payload reads from being optimised away).
    package var checksum: UInt64 = 0

    package init() {}
}
