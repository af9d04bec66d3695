import BusViews
import Foundation
import Histogram
import NotificationBus
import Synchronization

/// Measures the main actor's responsiveness: every 20 ms, from a detached task, how long a job
/// enqueued on the main actor waits before it runs.
final class MainActorPinger: Sendable {
    private let histogram = Mutex(
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .three))
    private let task = Mutex<Task<Void, Never>?>(nil)

    func start() {
        let started = Task.detached { [self] in
            while !Task.isCancelled {
                let sent = Timestamps.monotonicNanoseconds()
                let ran = await MainActor.run { Timestamps.monotonicNanoseconds() }
                histogram.withLock { _ = $0.record(max(1, min(ran &- sent, 600_000_000_000))) }
                // The probe's interval; cancelled on stop, which ends the loop.
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops sampling and summarises.
    func stop() async -> LatencySummary {
        let running = task.withLock { $0.take() }
        running?.cancel()
        await running?.value
        return histogram.withLock { LatencySummary($0) }
    }
}
