import Histogram
import NotificationBus

/// A subscription's counters, as the bus subscriber worker reports them (the bus's own type).
package typealias SubscriptionCounters = SubscriptionStats

extension Duration {
    /// The duration in whole nanoseconds (negative durations give 0).
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        let total = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return total > 0 ? UInt64(total) : 0
    }
}

/// Events per second for `count` events over `nanoseconds`.
func ratePerSecond(_ count: Int, _ nanoseconds: UInt64) -> Double {
    nanoseconds == 0 ? 0 : Double(count) * 1e9 / Double(nanoseconds)
}
