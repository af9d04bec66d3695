import Foundation
import NotificationBus

/// What the overload subscriber reports (its `result` line).
package struct OverloadSubscriberResult: Codable, Sendable {
    package var event = "result"
    package var policy: OverloadPolicy
    package var capacity: Int
    package var handlerMicroseconds: Int
    package var highWaterMark: Int32
    /// The loop's own in-band view.
    package var consumed: OverloadConsumed
    /// The subscription's counters once the loop ended (its iterator gone).
    package var subscription: OverloadSubscriptionCounters
    /// The bus's counters after close.
    package var bus: OverloadBusCounters
    /// How the loop ended: `endOfStream` (the publisher's end-of-stream record was processed and
    /// every event before it consumed), `publisherExited` (no end-of-stream record; the runner said
    /// the publisher had exited, and nothing arrived for a second once drained), or `timeout`.
    package var endedBy: String
    /// Subscribed (bus and subscription created) to the first notification handled, ns.
    package var subscribedToFirstNanoseconds: UInt64
    /// First to last event handled, ns.
    package var consumingNanoseconds: UInt64
    /// The end-of-stream record seen (bus counter) to the loop's end, ns (0 when never seen).
    package var drainAfterEndOfStreamNanoseconds: UInt64
    /// This process's `VmRSS` every `intervalMilliseconds`, and its `VmHWM`.
    package var memory: MemorySamples

    /// Notifications handled per second while consuming.
    package var consumeRate: Double { ratePerSecond(Int(consumed.notifications), consumingNanoseconds) }
}

/// The subscription's counters at the end, including what is still buffered (the bus's own type).
package typealias OverloadSubscriptionCounters = SubscriptionStats

/// The subscriber bus's counters after close (the workers' common type).
package typealias OverloadBusCounters = BusCounters
