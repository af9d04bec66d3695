import CoreMetrics
import Prometheus

/// Moves a Prometheus counter from one sample of a `UInt64` count to the next.
///
/// swift-prometheus keeps a counter in an `Int64` and wraps past `Int64.max`: a count that a
/// peer can drive (`lostUpstream` follows a publisher's sequence numbers, which a forged frame
/// can set near 2^64) would read negative, which Prometheus takes for a reset. Both samples are
/// clamped to `Int64.max` first, so the counter only ever rises and stops at `Int64.max`
/// (9,223,372,036,854,775,807); the exact count stays in `BusStats` and the command summaries.
enum CounterAdvance {
    static let ceiling = UInt64(Int64.max)

    /// How much the counter rises from `before` to `now` (0 when the count did not grow, or the
    /// counter already stands at its ceiling).
    static func increment(from before: UInt64, to now: UInt64) -> Int64 {
        let from = min(before, ceiling)
        let to = min(now, ceiling)
        return to > from ? Int64(to - from) : 0
    }

    static func advance(_ counter: Prometheus.Counter, from before: UInt64, to now: UInt64) {
        let step = increment(from: before, to: now)
        if step > 0 { counter.increment(by: step) }
    }

    /// The same for a swift-metrics counter (the bus's sampler makes them through a factory).
    static func advance(_ counter: CoreMetrics.Counter, from before: UInt64, to now: UInt64) {
        let step = increment(from: before, to: now)
        if step > 0 { counter.increment(by: step) }
    }
}
