#if canImport(Glibc)
import Glibc
#endif

/// Times as RFC 3339 text in UTC, for JSON that people and tools read.
///
/// Why beside the nanosecond integers: a JSON number past 2^53 loses digits in tools that read
/// numbers as doubles (jq 1.6 prints `1795782534105558000` for `1795782534105557967`); the text
/// keeps every digit and reads as a date.
package enum RFC3339 {
    /// `nanoseconds` since the Unix epoch as `2026-11-25T10:38:11.123456789Z`: always nine
    /// fractional digits, so the text sorts as the time does.
    package static func string(nanosecondsSinceEpoch nanoseconds: UInt64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        let fraction = nanoseconds % 1_000_000_000
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: some BinaryInteger, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))T"
            + "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2)).\(padded(fraction, 9))Z"
    }
}
