import NotificationBus

/// What the bus subscriber worker measured (its `result` line).
package struct BusSubscriberResult: Codable, Sendable {
    package var event = "result"
    /// Notifications the run should deliver.
    package var expected: Int
    /// Notifications the `for await` loop consumed.
    package var count: Int
    /// First to last consumed notification, ns (wall clock at the consumer).
    package var elapsedNanoseconds: UInt64
    /// (count - 1) / elapsed, notifications per second.
    package var rate: Double
    /// The first notification's publish timestamp to the last delivery, ns.
    package var endToEndNanoseconds: UInt64
    /// Publish (`notification.timestamp`) to delivery in the loop, per notification.
    package var latency: LatencySummary
    /// The subscription's counters at the end.
    package var subscription: SubscriptionCounters
    /// The subscriber bus's counters after close.
    package var bus: BusCounters
    /// Payload bytes consumed (checks the loop really read every payload).
    package var payloadBytes: Int
    /// Why the loop ended: `count` (all arrived), `timeout`, `idle` or `ended`.
    package var endedBy: String

    /// Whether every expected notification arrived and nothing was lost.
    package var complete: Bool {
        count == expected && subscription.lostUpstream == 0 && subscription.droppedLocalBuffer == 0
            && bus.rejected == 0
    }
}
