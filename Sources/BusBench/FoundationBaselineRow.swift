import Foundation

/// Foundation's `NotificationCenter` in this process, one block observer, the same payload, as
/// fast as `post` returns: the in-process row of a views run.
package struct FoundationBaselineRow: Codable, Sendable, Equatable {
    /// How the row is labelled in every output.
    package static let label = "Foundation NotificationCenter (in-process, block observer)"
    /// The CSV/JSON key of the row.
    package static let key = "foundation-notificationcenter"

    /// Payload bytes (a `[UInt8]` in `userInfo`).
    package var size: Int
    /// Posts made, and observer calls that read the payload back.
    package var posted: Int
    package var delivered: Int
    /// First post to last delivery, ns, and deliveries per second over it.
    package var elapsedNanoseconds: UInt64
    package var deliveredPerSecond: Double
    /// CPU time of the posting thread (the observer runs inside `post`), ns.
    package var cpuNanoseconds: UInt64

    /// CPU per notification (post plus the observer), ns.
    package var cpuPerNotificationNanoseconds: Double { delivered == 0 ? 0 : Double(cpuNanoseconds) / Double(delivered) }
}
