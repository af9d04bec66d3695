import Foundation

/// The raw REQ/REP round trip (C, two processes), whose half is the one-way baseline latency.
package struct RawRoundTrip: Codable, Sendable {
    /// Round-trip times, ns.
    package var roundTrip: LatencySummary
    /// Bytes per frame each way.
    package var frameBytes: Int

    /// Half the round trip's p50, ns.
    package var halfP50: Double { Double(roundTrip.p50) / 2 }
    /// Half the round trip's p99, ns.
    package var halfP99: Double { Double(roundTrip.p99) / 2 }
}
