import Foundation
import NotificationBus

/// The publisher's count at one moment.
package struct PostingSample: Codable, Sendable, Equatable {
    /// Wall clock, ns since the epoch (the hosts' samples use the same clock: one machine).
    package var wallNanoseconds: UInt64
    /// Notifications posted so far, every name.
    package var posted: UInt64

    package init(wallNanoseconds: UInt64, posted: UInt64) {
        self.wallNanoseconds = wallNanoseconds
        self.posted = posted
    }
}
