import NotificationBus

/// A bus's counters, as the workers report them.
package struct BusCounters: Codable, Sendable, Equatable {
    package var posted: UInt64
    package var sent: UInt64
    /// Frames the notifications in `sent` went in (fewer when batched).
    package var framesSent: UInt64
    package var unsent: UInt64
    package var framesReceived: UInt64
    package var unmatched: UInt64
    package var lostUpstream: UInt64
    package var endOfStreamRecords: UInt64
    package var rejected: UInt64

    /// Copies `stats`.
    package init(_ stats: BusStats) {
        posted = stats.posted
        sent = stats.sent
        framesSent = stats.framesSent
        unsent = stats.unsent
        framesReceived = stats.framesReceived
        unmatched = stats.unmatched
        lostUpstream = stats.lostUpstream
        endOfStreamRecords = stats.endOfStreamRecords
        rejected = stats.rejectedTotal
    }
}
