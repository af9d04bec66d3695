import Foundation
import NotificationBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A process's resident memory as Linux reports it in `/proc/<pid>/status`, in KiB.
package struct ProcessMemory: Codable, Sendable, Equatable {
    /// `VmRSS`: resident set size now.
    package var residentKiB: UInt64
    /// `VmHWM`: the peak resident set size since the process started (the kernel's high-water mark).
    package var peakResidentKiB: UInt64

    package init(residentKiB: UInt64, peakResidentKiB: UInt64) {
        self.residentKiB = residentKiB
        self.peakResidentKiB = peakResidentKiB
    }

    /// Parses the `VmRSS:` and `VmHWM:` lines of a `/proc/<pid>/status` text (values in kB, which
    /// the kernel means as KiB). Nil when either is missing: a zombie, or not Linux.
    package static func parse(status text: String) -> ProcessMemory? {
        var resident: UInt64?
        var peak: UInt64?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") {
                resident = kibibytes(line.dropFirst(6))
            } else if line.hasPrefix("VmHWM:") {
                peak = kibibytes(line.dropFirst(6))
            }
        }
        guard let resident, let peak else { return nil }
        return ProcessMemory(residentKiB: resident, peakResidentKiB: peak)
    }

    private static func kibibytes(_ field: Substring) -> UInt64? {
        // "\t   123456 kB"
        let parts = field.split(omittingEmptySubsequences: true, whereSeparator: { $0 == " " || $0 == "\t" })
        guard let number = parts.first, let value = UInt64(number) else { return nil }
        return value
    }

    /// Reads `/proc/self/status` (pid nil) or `/proc/<pid>/status`; nil when it cannot be read.
    package static func read(pid: pid_t? = nil) -> ProcessMemory? {
        let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
        // procfs files report size 0: read until end of file.
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            text.append(contentsOf: buffer[0..<count])
        }
        return parse(status: String(decoding: text, as: UTF8.self))
    }
}

/// What a memory sampler saw: every `VmRSS` sample, the largest, and the last `VmHWM`.
package struct MemorySamples: Codable, Sendable, Equatable {
    /// Milliseconds between samples.
    package var intervalMilliseconds: Int
    /// `VmRSS` at each sample, KiB, in order.
    package var residentKiB: [UInt64] = []
    /// The largest `VmRSS` sampled, KiB.
    package var maximumResidentKiB: UInt64 = 0
    /// The last `VmHWM` read, KiB: the kernel's peak, which no sampling interval can miss.
    package var peakResidentKiB: UInt64 = 0
    /// The last `VmRSS` read, KiB.
    package var lastResidentKiB: UInt64 = 0

    package init(intervalMilliseconds: Int) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    mutating func add(_ memory: ProcessMemory) {
        residentKiB.append(memory.residentKiB)
        maximumResidentKiB = max(maximumResidentKiB, memory.residentKiB)
        peakResidentKiB = max(peakResidentKiB, memory.peakResidentKiB)
        lastResidentKiB = memory.residentKiB
    }
}

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

    /// Starts sampling (the first sample is taken at once).
    func start() {
        Thread.detachNewThread { [self] in
            while true {
                let memory = ProcessMemory.read(pid: pid)
                let keepGoing = state.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    guard let memory else {
                        // The process is gone (or a zombie without memory): nothing more to see.
                        state.stopped = true
                        return false
                    }
                    state.samples.add(memory)
                    return true
                }
                guard keepGoing else { return }
                // Pacing only: the sample rate, not a synchronisation.
                usleep(useconds_t(intervalMilliseconds * 1_000))
            }
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
