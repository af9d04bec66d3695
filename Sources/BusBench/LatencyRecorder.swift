import Histogram
import NotificationBus

/// An HdrHistogram of nanosecond latencies from 1 ns to 10 minutes; larger values are clamped.
struct LatencyRecorder {
    static let highest: UInt64 = 600_000_000_000
    private(set) var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: LatencyRecorder.highest, numberOfSignificantValueDigits: .three)

    @inline(__always)
    mutating func record(_ nanoseconds: UInt64) {
        _ = histogram.record(Swift.min(Swift.max(nanoseconds, 1), Self.highest))
    }

    var summary: LatencySummary { LatencySummary(histogram) }
}
