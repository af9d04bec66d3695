import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time and peak memory of this process.
enum ProcessUsage {
    private static let RUSAGE_SELF_WHO = __rusage_who_t(RUSAGE_SELF.rawValue)

    /// User and system CPU time of the whole process, ns, and its peak RSS (KiB).
    ///
    /// The peak is the kernel's `VmHWM`, not `ru_maxrss`: Linux carries `ru_maxrss` across
    /// `execve`, and a child spawned with `posix_spawn` (vfork-style, sharing the parent's memory
    /// until exec) starts with the parent's peak, the benchmark runner's. `VmHWM` belongs to the
    /// process's own address space.
    static func current() -> (user: UInt64, system: UInt64, maxResidentKiB: UInt64) {
        var usage = Glibc.rusage()
        getrusage(RUSAGE_SELF_WHO, &usage)
        func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000 }
        let peak = ProcessMemory.read()?.peakResidentKiB ?? UInt64(max(0, usage.ru_maxrss))
        return (nanoseconds(usage.ru_utime), nanoseconds(usage.ru_stime), peak)
    }
}
