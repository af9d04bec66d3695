import Foundation

/// The raw PUB/SUB one-way latency at the paced rate (C publisher stamps, C subscriber measures).
package struct RawPacedLatency: Codable, Sendable {
    /// Messages received.
    package var count: Int
    /// Sequence gaps (must be 0).
    package var gaps: UInt64
    /// Send stamp to receipt, ns.
    package var latency: LatencySummary
}
