import NotificationBus

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
