import ArgumentParser

/// A seconds (or rate, or size) option given as a `Double`, checked before anything converts it.
///
/// ArgumentParser takes `inf`, `nan`, `1e300` and `1e-300` as valid `Double`s, and Swift traps
/// (SIGILL) when it converts a non-finite or out-of-range `Double` to an integer or a `Duration`.
/// So every such option is checked in its command's `validate()` (a usage error, exit 64, naming
/// the flag and the accepted range), and the conversions below saturate as a second guard.
enum SecondsOption {
    /// The longest a timeout option may be: 365 days (and so a `Duration` or milliseconds count
    /// that any clock or libzmq call takes).
    static let maximumTimeout: Double = 365 * 86_400

    /// Throws a usage error unless `value` is finite and within `range` (in `unit`), naming `flag`.
    static func check(_ value: Double, _ flag: String, in range: ClosedRange<Double>, unit: String = "seconds") throws {
        // `range.contains` is false for NaN; infinities are outside every finite range.
        guard value.isFinite, range.contains(value) else {
            throw ValidationError(
                "\(flag) must be from \(text(range.lowerBound)) to \(text(range.upperBound)) \(unit), got \(value)")
        }
    }

    /// `seconds` as a `Duration`, saturating at zero and at `maximumTimeout` (NaN: zero), so it
    /// never traps.
    static func duration(_ seconds: Double) -> Duration {
        .nanoseconds(Int64(clamped(seconds) * 1e9))
    }

    /// `seconds` in whole milliseconds, saturating at zero and at `maximumTimeout` (NaN: zero).
    static func milliseconds(_ seconds: Double) -> Int32 {
        Int32(clamping: Int64(clamped(seconds) * 1_000))
    }

    /// `seconds` within `0...maximumTimeout` (NaN: zero): every value there converts safely.
    private static func clamped(_ seconds: Double) -> Double {
        guard seconds > 0 else { return 0 }  // NaN too
        return Swift.min(seconds, maximumTimeout)
    }

    /// A span given in seconds by `flag`, in whole units of `perSecond` (1,000: milliseconds,
    /// 1,000,000: microseconds), what the scenario takes; nil gives `defaultSeconds`. Checked against
    /// `range` (seconds).
    static func span(
        _ seconds: Double?, _ flag: String, perSecond: Double,
        default defaultSeconds: Double, in range: ClosedRange<Double>
    ) throws -> Int {
        let value = seconds ?? defaultSeconds
        try check(value, flag, in: range)
        let units = Int((value * perSecond).rounded())
        // Kept in whole units: a value that would round to none must not quietly turn it off.
        guard value == 0 || units > 0 else {
            throw ValidationError("\(flag) \(value) is under one \(perSecond == 1_000 ? "millisecond" : "microsecond"), the finest it takes (0: none)")
        }
        return units
    }

    /// A bound as typed: `86400`, `0.1`.
    private static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
