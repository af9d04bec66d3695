import Foundation

/// What a style's time series says, in numbers the verdict uses.
package struct TimelineFindings: Codable, Sendable, Equatable {
    /// The largest backlog seen, and when (seconds since the first post).
    package var peakBacklog: Double = 0
    package var peakBacklogSeconds: Double = 0
    /// Backlog when the publisher stopped posting.
    package var backlogAtLastPost: Double = 0
    /// When losses upstream (or at the local buffer) first appeared, seconds since the first post.
    package var firstUpstreamLossSeconds: Double?
    /// The highest main-actor busy share of any interval, %.
    package var peakMainActorBusyPercent: Double = 0
}
