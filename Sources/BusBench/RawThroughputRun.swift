import Foundation

/// One raw-libzmq throughput run (C, XPUB/SUB, two processes).
package struct RawThroughputRun: Codable, Sendable {
    /// Messages the subscriber received.
    package var count: Int
    /// First to last message at the subscriber, ns.
    package var elapsedNanoseconds: UInt64
    /// (count - 1) / elapsed, messages per second.
    package var rate: Double
    /// Sequence numbers missing at the subscriber (must be 0 with NODROP).
    package var gaps: UInt64
    /// Messages of an unexpected size (must be 0).
    package var badSize: Int
    /// Bytes per ZeroMQ frame.
    package var frameBytes: Int
}
