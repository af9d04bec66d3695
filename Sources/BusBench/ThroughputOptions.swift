import Foundation
import NotificationBus

/// What `nbus bench throughput` measures and how.
package struct ThroughputOptions: Sendable {
    /// The notification name every scenario posts.
    package static let notificationName = "bench.data"

    /// The transport between the two processes.
    package enum Transport: String, Sendable, CaseIterable, Codable {
        /// `ipc://<fresh temp folder>/<scenario>.sock`.
        case ipc
        /// `tcp://127.0.0.1:*` (the binder reports the port it got).
        case tcp
    }

    /// How the two processes meet.
    package enum Topology: String, Sendable, CaseIterable, Codable {
        /// The publisher binds, the subscriber connects (raw: C XPUB -> SUB).
        case direct
        /// Both connect to a broker child: `nbus broker` with its defaults for the bus, a bare
        /// `zmq_proxy` (XSUB/XPUB, marks of 1,000,000: lossless for these runs) for raw libzmq.
        /// Throughput runs only (the peers kit measures latency through a broker).
        case brokered
    }

    /// Direct or through a broker.
    package var topology = Topology.direct
    /// The bus publisher's `BusConfiguration.batching`: its largest batch frame in bytes, 0 off.
    package var batchBytes = Batching.on.maximumFrameBytes
    /// Notifications per throughput run (and per in-process run).
    package var count = 1_000_000
    /// Payload bytes per notification.
    package var size = 256
    /// ZeroMQ send and receive high-water marks, both processes, baseline and bus alike.
    package var highWaterMark: Int32 = 10_000
    /// ipc or tcp.
    package var transport = Transport.ipc
    /// Per child process: killed after this many seconds (the command then fails).
    package var timeoutSeconds = 120
    /// Throughput runs per side (raw and bus alternate); the median is reported.
    package var runs = 5
    /// The paced latency run: notifications per second ...
    package var latencyRate = 10_000
    /// ... for this many seconds.
    package var latencySeconds = 2.0
    /// A paced run in the low-latency setting: the consumer on `bus.executor` and
    /// `BusConfiguration.idleSpin` set to this on both buses; 0 skips it. (A paced
    /// publisher always posts from a pacing thread of its own, as the C baseline does.)
    package var latencySpinMicroseconds = 200
    /// Measured REQ/REP round trips of the raw baseline.
    package var roundTrips = 20_000
    /// Skip the in-process rows (Foundation vs embedded bus).
    package var skipInProcess = false
    /// `--typed --topology brokered`: a third run per round, the typed side with `BenchOrder`'s
    /// `Codable` coding (its field coding is the `typed` run).
    package var typedCodable = false
    /// The `nbus` executable to start workers from (normally this process's own executable).
    package var nbusExecutable: String
    /// The `nbus-baseline` executable.
    package var baselineExecutable: String
    /// The arguments that select the hidden worker command of `nbusExecutable`, `BenchWorkerCommand.nbusSubcommand` unless told otherwise.
    package var workerCommand: [String]

    /// Options with default sizes, executables found next to this process's executable.
    package init(workerCommand: [String] = BenchWorkerCommand.nbusSubcommand) {
        let directory = Self.executableDirectory()
        nbusExecutable = Self.currentExecutable()
        baselineExecutable = (directory as NSString).appendingPathComponent("nbus-baseline")
        self.workerCommand = workerCommand
    }

    /// This process's executable (`/proc/self/exe` resolved; `CommandLine.arguments[0]` as a fallback).
    package static func currentExecutable() -> String {
        // No /proc (not Linux, or a chroot without it): argument 0 below is the fallback.
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return resolved
        }
        let argument0 = CommandLine.arguments.first ?? "nbus"
        return URL(fileURLWithPath: argument0).resolvingSymlinksInPath().path
    }

    /// The folder holding this process's executable (or `executable`): where SwiftPM puts
    /// `nbus-baseline` too.
    package static func executableDirectory(of executable: String? = nil) -> String {
        ((executable ?? currentExecutable()) as NSString).deletingLastPathComponent
    }

    /// Checks the values; throws `.invalidOptions` with what is wrong (before anything starts).
    package func validate() throws(BenchError) {
        guard count >= 2 else { throw .invalidOptions("--count must be at least 2") }
        guard (0...WireFormat.defaultMaximumPayload).contains(size) else {
            throw .invalidOptions("--size must be 0...\(WireFormat.defaultMaximumPayload)")
        }
        guard highWaterMark >= 0 else { throw .invalidOptions("--hwm must be >= 0 (0: unbounded)") }
        guard timeoutSeconds >= 1 else { throw .invalidOptions("--timeout must be at least 1 second") }
        guard runs >= 1 else { throw .invalidOptions("--runs must be at least 1") }
        guard latencyRate >= 1, latencySeconds > 0 else { throw .invalidOptions("the latency run needs a rate and a duration") }
        guard roundTrips >= 1 else { throw .invalidOptions("--round-trips must be at least 1") }
    }
}
