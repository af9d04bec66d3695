import NotificationBus

/// Busy work standing in for the cost of a real render: spins on the monotonic clock for a duration.
enum BodyCost {
    /// Spins for `duration` (nothing for zero or less); returns the nanoseconds actually spent.
    @discardableResult
    static func spin(for duration: Duration) -> UInt64 {
        let target = nanoseconds(duration)
        let start = Timestamps.monotonicNanoseconds()
        guard target > 0 else { return 0 }
        var accumulator: UInt64 = 0x9E37_79B9_7F4A_7C15
        var now = start
        while now &- start < target {
            for _ in 0..<64 { accumulator = accumulator &* 6_364_136_223_846_793_005 &+ 1 }
            now = Timestamps.monotonicNanoseconds()
        }
        sink(accumulator)
        return now &- start
    }

    /// Whole nanoseconds in `duration`, zero when negative.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let total = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        return total <= 0 ? 0 : UInt64(total)
    }

    @inline(never)
    private static func sink(_ value: UInt64) {
        if value == 42 { print("", terminator: "") }
    }
}
