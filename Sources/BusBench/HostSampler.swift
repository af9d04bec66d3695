import BusViews
import Foundation
import NotificationBus
import Synchronization

/// Samples a host's counters every 250 ms from a task off the main actor (so a saturated main
/// actor delays no sample): what the views' code got, the losses by cause, main-actor busy time.
final class HostSampler: Sendable {
    static let intervalMilliseconds = 250
    /// At most this many samples (about 40 minutes at 4 a second): memory stays bounded.
    static let limit = 10_000

    private let readers: [ViewNodeReader]
    private let probes: [ViewProbe]
    private let interval: IntervalLatency
    private let isTask: Bool
    private let state = Mutex<(samples: [HostSample], task: Task<Void, Never>?)>(([], nil))

    init(readers: [ViewNodeReader], probes: [ViewProbe], interval: IntervalLatency, isTask: Bool) {
        self.readers = readers
        self.probes = probes
        self.interval = interval
        self.isTask = isTask
    }

    func start() {
        take()
        let task = Task.detached { [self] in
            while !Task.isCancelled {
                // The sampling interval; cancelled on stop, which the check below sees.
                try? await Task.sleep(for: .milliseconds(Self.intervalMilliseconds))
                if Task.isCancelled { break }
                take()
            }
        }
        state.withLock { $0.task = task }
    }

    /// Stops sampling, takes a last sample, and returns them all.
    func stop() async -> [HostSample] {
        let task = state.withLock { $0.task.take() }
        task?.cancel()
        await task?.value
        take()
        return state.withLock { $0.samples }
    }

    private func take() {
        var sample = HostSample(wallNanoseconds: Timestamps.wallClockNanoseconds())
        for (reader, probe) in zip(readers, probes) {
            let metrics = reader.metrics
            sample.delivered += probe.counts.delivered
            sample.missedWhileHidden += isTask ? metrics.missedWhileHidden : 0
            sample.replayed += metrics.replayed
            sample.mainActorBusyNanoseconds += metrics.mainActorBusyNanoseconds
            for stats in reader.subscriptionStats {
                sample.lostUpstream += stats.lostUpstream
                sample.droppedLocalBuffer += stats.droppedLocalBuffer
            }
        }
        let latency = interval.take()
        sample.latencyCount = latency.count
        sample.latencyP50 = latency.p50
        sample.latencyP99 = latency.p99
        state.withLock { state in
            if state.samples.count < Self.limit { state.samples.append(sample) }
        }
    }
}
