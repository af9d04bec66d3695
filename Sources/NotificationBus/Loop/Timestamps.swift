#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanosecond clocks for publish timestamps (wall clock, comparable across processes on one
/// machine) and for measuring durations (monotonic).
package enum Timestamps {
    /// Nanoseconds since the Unix epoch, UTC (`CLOCK_REALTIME`): what NBP/1's timestamp carries.
    package static func wallClockNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// `duration` in whole milliseconds for a deadline: negative is 0, and anything beyond a year
    /// is a year (`.seconds(Int64.max)`, "for ever", must not overflow).
    package static func boundedMilliseconds(_ duration: Duration) -> Int {
        // Under a second, a negative duration has seconds 0 and negative attoseconds: compare the
        // whole value (a request's time left can be a little below zero when the clock moved on).
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        return Int(min(seconds, 365 * 86_400)) * 1_000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// `duration` in seconds, for reports, logs and metrics.
    package static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `duration` in nanoseconds, 0 for negative ones and at most a year (no trap on huge ones).
    package static func boundedNanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(boundedMilliseconds(duration)) &* 1_000_000 &+ UInt64(max(0, duration.components.attoseconds) / 1_000_000_000 % 1_000_000)
    }

    /// Monotonic nanoseconds (`CLOCK_MONOTONIC`), for durations within one process.
    package static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Whole milliseconds from now until `deadline` (monotonic nanoseconds), rounded up so a
    /// sleep of that long reaches it; 0 once it has passed.
    package static func milliseconds(until deadline: UInt64) -> Int {
        let now = monotonicNanoseconds()
        return deadline > now ? Int((deadline - now) / 1_000_000) + 1 : 0
    }
}
