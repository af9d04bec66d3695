import Histogram
import NotificationBus

/// Latency percentiles in nanoseconds, summarised from an HdrHistogram (3 significant digits).
public struct LatencySummary: Codable, Sendable, Equatable {
    /// Samples recorded.
    public var count: UInt64
    /// Median.
    public var p50: UInt64
    /// 90th percentile.
    public var p90: UInt64
    /// 99th percentile.
    public var p99: UInt64
    /// 99.9th percentile.
    public var p999: UInt64
    /// Largest sample.
    public var max: UInt64
    /// Mean.
    public var mean: Double

    /// Summarises `histogram`.
    public init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        p50 = histogram.valueAtPercentile(50)
        p90 = histogram.valueAtPercentile(90)
        p99 = histogram.valueAtPercentile(99)
        p999 = histogram.valueAtPercentile(99.9)
        max = histogram.max
        mean = histogram.totalCount == 0 ? 0 : histogram.mean
    }

    /// A summary from known percentiles (the raw baseline's sorted samples).
    public init(count: UInt64, p50: UInt64, p90: UInt64 = 0, p99: UInt64, p999: UInt64 = 0, max: UInt64, mean: Double) {
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
public typealias SubscriptionCounters = SubscriptionStats

/// A bus's counters, as the workers report them.
public struct BusCounters: Codable, Sendable, Equatable {
    public var posted: UInt64
    public var sent: UInt64
    /// Frames the notifications in `sent` went in (fewer when batched).
    public var framesSent: UInt64
    public var unsent: UInt64
    public var framesReceived: UInt64
    public var unmatched: UInt64
    public var lostUpstream: UInt64
    public var endOfStreamRecords: UInt64
    public var rejected: UInt64

    /// Copies `stats`.
    public init(_ stats: BusStats) {
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
public struct BusSubscriberResult: Codable, Sendable {
    public var event = "result"
    /// Notifications the run should deliver.
    public var expected: Int
    /// Notifications the `for await` loop consumed.
    public var count: Int
    /// First to last consumed notification, ns (wall clock at the consumer).
    public var elapsedNanoseconds: UInt64
    /// (count - 1) / elapsed, notifications per second.
    public var rate: Double
    /// The first notification's publish timestamp to the last delivery, ns.
    public var endToEndNanoseconds: UInt64
    /// Publish (`notification.timestamp`) to delivery in the loop, per notification.
    public var latency: LatencySummary
    /// The subscription's counters at the end.
    public var subscription: SubscriptionCounters
    /// The subscriber bus's counters after close.
    public var bus: BusCounters
    /// Payload bytes consumed (checks the loop really read every payload).
    public var payloadBytes: Int
    /// Why the loop ended: `count` (all arrived), `timeout`, `idle` or `ended`.
    public var endedBy: String

    /// Whether every expected notification arrived and nothing was lost.
    public var complete: Bool {
        count == expected && subscription.lostUpstream == 0 && subscription.droppedLocalBuffer == 0
            && bus.rejected == 0
    }
}

/// What the bus publisher worker measured (its `done` line).
public struct BusPublisherResult: Codable, Sendable {
    public var event = "done"
    /// Notifications posted.
    public var count: Int
    /// Time spent in the posting loop, ns.
    public var postNanoseconds: UInt64
    /// Time `close()` took to flush, ns.
    public var closeNanoseconds: UInt64
    /// The pacing rate asked for (0: as fast as possible).
    public var requestedRate: Int
    /// The publisher bus's counters after close.
    public var bus: BusCounters
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
