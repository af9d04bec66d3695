import Foundation
import NotificationBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Samples a process's `/proc/<pid>/status` (this process's with pid nil) on a thread of its own
/// every `interval`, until `stop()` or until the process's status can no longer be read.
final class MemorySampler: Sendable {
    private let pid: pid_t?
    private let intervalMilliseconds: Int
    private let state: Mutex<(samples: MemorySamples, stopped: Bool)>

    init(pid: pid_t?, intervalMilliseconds: Int = 250) {
        self.pid = pid
        self.intervalMilliseconds = max(1, intervalMilliseconds)
        state = Mutex((MemorySamples(intervalMilliseconds: max(1, intervalMilliseconds)), false))
    }

    /// Starts sampling: the first sample now, on the caller's thread, then one every interval on a
    /// thread of its own. On a loaded machine that thread may first run seconds later, after a
    /// short-lived process ended: with the first sample taken there, the runner saw none at all
    /// (`OverloadBenchTests`, twice in three runs of the suite beside `stress-ng --cpu 2`).
    func start() {
        guard sample() else { return }
        Thread.detachNewThread { [self] in
            while true {
                // Pacing only: the sample rate, not a synchronisation.
                usleep(useconds_t(intervalMilliseconds * 1_000))
                guard sample() else { return }
            }
        }
    }

    /// Takes one sample; false once sampling is over (stopped, or the process gone).
    private func sample() -> Bool {
        let memory = ProcessMemory.read(pid: pid)
        return state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            guard let memory else {
                // The process is gone (or a zombie without memory): nothing more to see.
                state.stopped = true
                return false
            }
            state.samples.add(memory)
            return true
        }
    }

    /// What was sampled so far.
    var samples: MemorySamples { state.withLock { $0.samples } }

    /// Stops sampling, takes one last sample if the process is still readable, and returns them all.
    @discardableResult
    func stop() -> MemorySamples {
        let last = ProcessMemory.read(pid: pid)
        return state.withLock { state in
            if !state.stopped, let last { state.samples.add(last) }
            state.stopped = true
            return state.samples
        }
    }
}
