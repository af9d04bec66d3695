import Foundation

/// One interval (about 250 ms) of a style's run, from its host's samples and the publisher's.
package struct TimelinePoint: Codable, Sendable, Equatable {
    /// End of the interval, seconds since the publisher's first post.
    package var seconds: Double
    /// Notifications posted to this style's views per second in the interval.
    package var publishedPerSecond: Double
    /// Notifications handed to the views' code per second.
    package var deliveredPerSecond: Double
    /// Published to the views so far, minus delivered and every loss counted so far: what is
    /// still queued somewhere (sockets, buffers, the main actor's queue) at the interval's end.
    package var backlog: Double
    /// Publish-to-state-update latency of the updates made in the interval (nil: none), ns.
    package var latencyP50: UInt64?
    package var latencyP99: UInt64?
    /// Losses per second in the interval, by cause, and replays on reappear per second.
    package var lostUpstreamPerSecond: Double
    package var droppedLocalBufferPerSecond: Double
    package var missedWhileHiddenPerSecond: Double
    package var replayedPerSecond: Double
    /// Share of the interval the main actor spent on these views' work (runtime accounting), %.
    package var mainActorBusyPercent: Double
}
