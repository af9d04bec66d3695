import Foundation
import NotificationBus

/// The subscriber's buffering policy in the overload benchmark (`--policy`).
package enum OverloadPolicy: String, Sendable, CaseIterable, Codable {
    /// `.dropOldest(capacity:)`: the I/O thread keeps reading; the buffer discards its oldest.
    case dropOldest = "drop-oldest"
    /// `.dropNewest(capacity:)`: the I/O thread keeps reading; the buffer refuses the arriving one.
    case dropNewest = "drop-newest"
    /// `.suspendProducer(capacity:)`: the I/O thread stops reading; ZeroMQ's HWMs fill and the
    /// publisher's XPUB drops.
    case suspend

    /// The bus's `BufferingPolicy` for this choice.
    package func buffering(capacity: Int) -> BufferingPolicy {
        switch self {
        case .dropOldest: return .dropOldest(capacity: capacity)
        case .dropNewest: return .dropNewest(capacity: capacity)
        case .suspend: return .suspendProducer(capacity: capacity)
        }
    }
}
