import Foundation

/// Raw libzmq PUB/SUB in two processes (`nbus-baseline`, C), run in the same invocation as a views
/// scenario with the scenario's transport, rate, payload size and high-water mark: what each
/// style's figures are read against.
package struct RawBaselineRow: Codable, Sendable, Equatable {
    /// How the row is labelled in every output.
    package static let label = "raw libzmq PUB/SUB (nbus-baseline, C)"
    /// The CSV/JSON key of the row.
    package static let key = "raw-libzmq"

    /// The scenario's transport (ipc or tcp).
    package var transport: ThroughputOptions.Transport
    /// Frames per second the publisher was paced to (nil: as fast as ZeroMQ takes them).
    package var requestedRate: Int?
    /// Payload bytes, and bytes per frame (name, NUL, NBP/1 header, payload).
    package var size: Int
    package var frameBytes: Int
    /// Frames sent, and received by the subscriber (equal: XPUB with NODROP loses none).
    package var published: Int
    package var delivered: Int
    /// Sequence gaps and frames of the wrong size the subscriber saw (both must be 0).
    package var gaps: UInt64
    package var badSize: Int
    /// First to last frame at the subscriber, ns, and frames per second over it.
    package var elapsedNanoseconds: UInt64
    package var deliveredPerSecond: Double
    /// Send stamp to receipt, ns (paced runs only: unpaced frames carry one stamp for all).
    package var latency: LatencySummary?
    /// The subscriber process's CPU time (getrusage, its whole life) and peak RSS (VmHWM).
    package var cpuNanoseconds: UInt64
    package var peakResidentKiB: UInt64

    /// Subscriber CPU per frame, ns.
    package var cpuPerFrameNanoseconds: Double { delivered == 0 ? 0 : Double(cpuNanoseconds) / Double(delivered) }
}
