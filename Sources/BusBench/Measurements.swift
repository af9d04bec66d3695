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

/// A subscription's counters, as the bus subscriber worker reports them (the bus's own type).
package typealias SubscriptionCounters = SubscriptionStats

/// A bus's counters, as the workers report them.
package struct BusCounters: Codable, Sendable, Equatable {
    package var posted: UInt64
    package var sent: UInt64
    /// Frames the notifications in `sent` went in (fewer when batched).
    package var framesSent: UInt64
    package var unsent: UInt64
    package var framesReceived: UInt64
    package var unmatched: UInt64
    package var lostUpstream: UInt64
    package var endOfStreamRecords: UInt64
    package var rejected: UInt64

    /// Copies `stats`.
    package init(_ stats: BusStats) {
        posted = stats.posted
        sent = stats.sent
        framesSent = stats.framesSent
        unsent = stats.unsent
        framesReceived = stats.framesReceived
        unmatched = stats.unmatched
        lostUpstream = stats.lostUpstream
        endOfStreamRecords = stats.endOfStreamRecords
        rejected = stats.rejectedTotal
    }
}

/// What the bus subscriber worker measured (its `result` line).
package struct BusSubscriberResult: Codable, Sendable {
    package var event = "result"
    /// Notifications the run should deliver.
    package var expected: Int
    /// Notifications the `for await` loop consumed.
    package var count: Int
    /// First to last consumed notification, ns (wall clock at the consumer).
    package var elapsedNanoseconds: UInt64
    /// (count - 1) / elapsed, notifications per second.
    package var rate: Double
    /// The first notification's publish timestamp to the last delivery, ns.
    package var endToEndNanoseconds: UInt64
    /// Publish (`notification.timestamp`) to delivery in the loop, per notification.
    package var latency: LatencySummary
    /// The subscription's counters at the end.
    package var subscription: SubscriptionCounters
    /// The subscriber bus's counters after close.
    package var bus: BusCounters
    /// Payload bytes consumed (checks the loop really read every payload).
    package var payloadBytes: Int
    /// Why the loop ended: `count` (all arrived), `timeout`, `idle` or `ended`.
    package var endedBy: String

    /// Whether every expected notification arrived and nothing was lost.
    package var complete: Bool {
        count == expected && subscription.lostUpstream == 0 && subscription.droppedLocalBuffer == 0
            && bus.rejected == 0
    }
}

/// What the bus publisher worker measured (its `done` line).
package struct BusPublisherResult: Codable, Sendable {
    package var event = "done"
    /// Notifications posted.
    package var count: Int
    /// Time spent in the posting loop, ns.
    package var postNanoseconds: UInt64
    /// Time `close()` took to flush, ns.
    package var closeNanoseconds: UInt64
    /// The pacing rate asked for (0: as fast as possible).
    package var requestedRate: Int
    /// The publisher bus's counters after close.
    package var bus: BusCounters
}

/// The raw C subscriber's `result` line.
struct RawSubscriberResult: Decodable, Sendable {
    var count: Int
    var elapsedNanoseconds: UInt64
    var rate: Double
    var gaps: UInt64
    var badSize: Int
    var frameBytes: Int
    /// The subscriber process's own getrusage at the end (nil from an older `nbus-baseline`).
    var cpuUserNanoseconds: UInt64?
    var cpuSystemNanoseconds: UInt64?
    var maxResidentKiB: UInt64?
    /// With `--latency`: send stamp to receipt, ns.
    var latencyP50: UInt64?
    var latencyP99: UInt64?
    var latencyP999: UInt64?
    var latencyMax: UInt64?
    var latencyMean: Double?

    enum CodingKeys: String, CodingKey {
        case count, rate, gaps
        case elapsedNanoseconds = "elapsed_ns"
        case badSize = "bad_size"
        case frameBytes = "frame_bytes"
        case cpuUserNanoseconds = "cpu_user_ns", cpuSystemNanoseconds = "cpu_system_ns", maxResidentKiB = "max_rss_kib"
        case latencyP50 = "latency_p50_ns", latencyP99 = "latency_p99_ns", latencyP999 = "latency_p999_ns"
        case latencyMax = "latency_max_ns", latencyMean = "latency_mean_ns"
    }

    /// The latency summary, when the run recorded one.
    var latency: LatencySummary? {
        guard let latencyP50, let latencyP99 else { return nil }
        return LatencySummary(
            count: UInt64(count), p50: latencyP50, p99: latencyP99, p999: latencyP999 ?? 0, max: latencyMax ?? 0,
            mean: latencyMean ?? 0)
    }
}

/// The raw C REQ's `rtt` line.
struct RawRoundTripResult: Decodable, Sendable {
    var count: UInt64
    var frameBytes: Int
    var p50: UInt64
    var p99: UInt64
    var min: UInt64
    var max: UInt64
    var mean: Double

    enum CodingKeys: String, CodingKey {
        case count, mean = "mean_ns"
        case frameBytes = "frame_bytes"
        case p50 = "p50_ns", p99 = "p99_ns", min = "min_ns", max = "max_ns"
    }
}

/// A `bound` line: the endpoint a binding child listens on (the real port for `tcp://...:*`).
struct BoundLine: Decodable, Sendable {
    var event: String
    var endpoint: String
}

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
