import NotificationBus

/// What the bus publisher worker measured (its `done` line).
package struct BusPublisherResult: Codable, Sendable {
    package var event = "done"
    /// Notifications posted.
    package var count: Int
    /// Time spent in the posting loop, ns.
    package var postNanoseconds: UInt64
    /// Time `close()` took to flush, ns.
    package var closeNanoseconds: UInt64
    /// The pacing rate asked for (0: as fast as possible).
    package var requestedRate: Int
    /// The publisher bus's counters after close.
    package var bus: BusCounters
}
