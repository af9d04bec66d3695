import Foundation
import NotificationBus

/// What the views publisher reports when it is done (its `done` line).
package struct ScenarioPublisherResult: Codable, Sendable, Equatable {
    package var event = "done"
    /// Notifications posted per name index (so per name: sequence numbers 1...posted).
    package var postedPerName: [UInt64]
    /// Of those, how many match (first payload byte 1).
    package var matchingPerName: [UInt64]
    /// Wall-clock time of the first and the last post, ns since the epoch.
    package var firstPostWallNanoseconds: UInt64
    package var lastPostWallNanoseconds: UInt64
    /// Time in the posting loop and in `close()`, ns.
    package var postNanoseconds: UInt64
    package var closeNanoseconds: UInt64
    /// The rate asked for (0: max).
    package var requestedRate: Int
    /// The publisher bus's counters after close.
    package var bus: BusCounters
    /// `BusStats.endOfStreamUnacknowledged` at close.
    package var endOfStreamUnacknowledged: UInt64
    /// Why posting stopped: `count` or `seconds`.
    package var stoppedBy: String
    /// Notifications posted so far, sampled about every 250 ms from the first post to the last
    /// (the time series' "published").
    package var timeline: [PostingSample] = []

    /// All notifications posted.
    package var posted: UInt64 { postedPerName.reduce(0, +) }

    /// Posts per second over the posting loop.
    package var postRate: Double { ratePerSecond(Int(posted), postNanoseconds) }

    /// First to last post, ns (the publishing window).
    package var windowNanoseconds: UInt64 {
        lastPostWallNanoseconds > firstPostWallNanoseconds ? lastPostWallNanoseconds - firstPostWallNanoseconds : 0
    }
}
