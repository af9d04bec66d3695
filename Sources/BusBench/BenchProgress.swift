import Foundation

/// Where a long benchmark run is while its publisher posts, for a progress display. BusBench
/// only reports it (about every 250 ms); the command line decides how to show it.
package struct PostingProgress: Sendable, Equatable {
    /// Which run: `views`, `sweep 2/3: rate = 20k`, `filter`.
    package var run: String
    /// Seconds since the first post, and the scenario's bound.
    package var elapsedSeconds: Double
    package var plannedSeconds: Double
    /// Notifications posted so far (as the publisher last reported), and the scenario's bound.
    package var posted: Int
    package var plannedCount: Int

    /// A progress report.
    package init(run: String, elapsedSeconds: Double, plannedSeconds: Double, posted: Int, plannedCount: Int) {
        self.run = run
        self.elapsedSeconds = elapsedSeconds
        self.plannedSeconds = plannedSeconds
        self.posted = posted
        self.plannedCount = plannedCount
    }

    /// How far posting is, 0...1: whichever bound (time or count) is nearer.
    package var fraction: Double {
        let byTime = plannedSeconds > 0 ? elapsedSeconds / plannedSeconds : 0
        let byCount = plannedCount > 0 ? Double(posted) / Double(plannedCount) : 0
        return min(1, max(0, max(byTime, byCount)))
    }
}

/// The callbacks of a long run: `step` gets one line per step, `posting` the posting progress.
package struct BenchProgressHandlers: Sendable {
    /// One line per step (baselines started, hosts ready, publisher done...).
    package var step: @Sendable (String) -> Void
    /// The posting progress, about every 250 ms while a publisher posts.
    package var posting: @Sendable (PostingProgress) -> Void

    /// Handlers that ignore what they are not given.
    package init(
        step: @escaping @Sendable (String) -> Void = { _ in }, posting: @escaping @Sendable (PostingProgress) -> Void = { _ in }
    ) {
        self.step = step
        self.posting = posting
    }

    /// Nothing reported.
    package static let silent = BenchProgressHandlers()
}
