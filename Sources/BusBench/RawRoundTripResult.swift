import NotificationBus

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
