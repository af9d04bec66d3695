import Histogram
import NotificationBus

/// Latency percentiles in nanoseconds, summarised from an HdrHistogram (3 significant digits).
package struct LatencySummary: Codable, Sendable, Equatable {
    /// Samples recorded.
    package var count: UInt64
    /// Median.
    package var p50: UInt64
    /// 90th percentile.
    package var p90: UInt64
    /// 99th percentile.
    package var p99: UInt64
    /// 99.9th percentile.
    package var p999: UInt64
    /// Largest sample.
    package var max: UInt64
    /// Mean.
    package var mean: Double

    /// Summarises `histogram`.
    package init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        p50 = histogram.valueAtPercentile(50)
        p90 = histogram.valueAtPercentile(90)
        p99 = histogram.valueAtPercentile(99)
        p999 = histogram.valueAtPercentile(99.9)
        max = histogram.max
        mean = histogram.totalCount == 0 ? 0 : histogram.mean
    }

    /// A summary from known percentiles (the raw baseline's sorted samples).
    package init(count: UInt64, p50: UInt64, p90: UInt64 = 0, p99: UInt64, p999: UInt64 = 0, max: UInt64, mean: Double) {
        self.count = count
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
        self.mean = mean
    }
}
