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

/// `nbus bench throughput`: the bus across two processes against raw libzmq across two processes,
/// in one invocation, plus latency and the in-process rows. Every child is bounded by a timeout
/// and killed on every exit path; a failing child fails the run with its stderr.
package enum ThroughputBenchmark {
    /// Runs every scenario; `progress` receives one line per step (for stderr).
    ///
    /// Throws `BenchError` when a child fails or times out. Lost or malformed messages do not
    /// throw: they are listed in `report.accountingErrors` (the command exits non-zero on them).
    package static func run(
        _ options: ThroughputOptions, progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> ThroughputReport {
        try options.validate()
        let group = ChildGroup()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("nbus-bench-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer {
            group.killAll()
            // Cleanup of a scratch folder under the temp dir: a leftover costs nothing and must not hide
            // the result or the error on its way out.
            try? FileManager.default.removeItem(at: folder)
        }
        let runner = Runner(options: options, group: group, folder: folder.path)
        // Cancelling the task (SIGINT in the CLI) kills the children, so every wait below ends.
        return try await withTaskCancellationHandler {
            let report = try await runAll(options, runner, progress)
            try Task.checkCancellation()
            return report
        } onCancel: {
            group.killAll()
        }
    }

    private static func runAll(
        _ options: ThroughputOptions, _ runner: Runner, _ progress: @escaping @Sendable (String) -> Void
    ) async throws -> ThroughputReport {
        var report = ThroughputReport(options: options)
        if options.topology == .brokered {
            for run in 1...options.runs {
                try Task.checkCancellation()
                progress("run \(run)/\(options.runs): raw libzmq through zmq_proxy, \(options.count) messages")
                let raw = try await runner.brokeredRawThroughput(run: run)
                report.raw.append(raw)
                progress("  raw: \(Format.rate(raw.rate))/s")
                progress("run \(run)/\(options.runs): bus through nbus broker, \(options.count) notifications")
                let bus = try await runner.brokeredBusThroughput(run: run)
                report.bus.append(bus)
                progress("  bus: \(Format.rate(bus.subscriber.rate))/s")
            }
            report.checkAccounting()
            return report
        }
        for run in 1...options.runs {
            try Task.checkCancellation()
            progress("run \(run)/\(options.runs): raw libzmq, \(options.count) messages")
            let raw = try await runner.rawThroughput(run: run)
            report.raw.append(raw)
            progress("  raw: \(Format.rate(raw.rate))/s")
            progress("run \(run)/\(options.runs): bus, \(options.count) notifications")
            let bus = try await runner.busThroughput(tag: "bus-\(run)", count: options.count, rate: nil)
            report.bus.append(bus)
            progress("  bus: \(Format.rate(bus.subscriber.rate))/s")
        }

        progress("raw libzmq REQ/REP round trips: \(options.roundTrips)")
        report.rawRoundTrip = try await runner.rawRoundTrip()

        let pacedCount = max(2, Int(Double(options.latencyRate) * options.latencySeconds))
        progress("raw libzmq PUB/SUB latency run: \(options.latencyRate) messages/s for \(options.latencySeconds) s")
        report.rawPacedLatency = try await runner.rawPacedLatency(count: pacedCount, rate: options.latencyRate)
        progress("bus latency run: \(options.latencyRate) notifications/s for \(options.latencySeconds) s")
        report.pacedLatency = try await runner.busThroughput(tag: "latency", count: pacedCount, rate: options.latencyRate)
        progress("bus latency run with the consumer in a plain task: \(options.latencyRate) notifications/s")
        report.pacedLatencyPlainTask = try await runner.busThroughput(
            tag: "latency-plain", count: pacedCount, rate: options.latencyRate, plainTask: true)
        if options.latencySpinMicroseconds > 0 {
            progress("bus latency run, low-latency setting (idle spin \(options.latencySpinMicroseconds) us): \(options.latencyRate) notifications/s")
            report.pacedLatencyIdleSpin = try await runner.busThroughput(
                tag: "latency-spin", count: pacedCount, rate: options.latencyRate, spin: options.latencySpinMicroseconds)
        }

        if !options.skipInProcess {
            for run in 1...options.runs {
                try Task.checkCancellation()
                progress("run \(run)/\(options.runs): in-process, Foundation NotificationCenter and embedded bus")
                report.foundation.append(FoundationCenterBenchmark.blockObserver(count: options.count, size: options.size))
                let (sample, counters) = try await EmbeddedBusBenchmark.run(
                    count: options.count, size: options.size, highWaterMark: options.highWaterMark,
                    timeout: .seconds(options.timeoutSeconds))
                report.embedded.append(sample)
                report.embeddedCounters.append(counters)
            }
            progress("in-process: Foundation bridged into an AsyncStream (for information)")
            report.foundationAsyncStream = await FoundationCenterBenchmark.asyncStreamBridge(
                count: options.count, size: options.size)
        }
        report.checkAccounting()
        return report
    }
}

/// Starts and reads the child processes of one benchmark.
private struct Runner: Sendable {
    let options: ThroughputOptions
    let group: ChildGroup
    let folder: String

    private var childTimeout: Duration { .seconds(options.timeoutSeconds + 10) }

    private var raw: RawBaseline {
        RawBaseline(
            group: group, executable: options.baselineExecutable, folder: folder, transport: options.transport,
            timeoutSeconds: options.timeoutSeconds)
    }

    private func stream(count: Int, rate: Int? = nil, latency: Bool = false) -> RawBaseline.Stream {
        RawBaseline.Stream(
            count: count, size: options.size, highWaterMark: options.highWaterMark, name: ThroughputOptions.notificationName,
            rate: rate, latency: latency)
    }

    /// Raw PUB/SUB one-way latency at the paced run's rate: the C publisher stamps each frame.
    func rawPacedLatency(count: Int, rate: Int) async throws -> RawPacedLatency {
        let result = try await raw.publishSubscribe(tag: "raw-latency", stream(count: count, rate: rate, latency: true))
        guard let latency = result.latency else {
            throw BenchError.badOutput(label: "raw paced subscriber (nbus-baseline sub --latency)", output: "no latency fields", stderr: "")
        }
        return RawPacedLatency(count: result.count, gaps: result.gaps, latency: latency)
    }

    private func workerArguments(
        _ role: BusWorkerOptions.Role, endpoint: String, count: Int, rate: Int?, paced: Bool, spin: Int = 0,
        plainTask: Bool = false, connectPublisher: Bool = false
    ) -> [String] {
        var worker = BusWorkerOptions(role: role, endpoint: endpoint, count: count)
        worker.idleSpinMicroseconds = spin
        worker.plainTask = plainTask && role == .subscriber
        worker.size = options.size
        worker.highWaterMark = options.highWaterMark
        worker.rate = rate
        // Unpaced runs measure throughput: the consumer times every 16th notification (62,500
        // per million for the under-load percentiles). Paced runs time every one.
        if role == .subscriber && !paced { worker.latencySampleEvery = 16 }
        worker.timeoutSeconds = options.timeoutSeconds
        worker.exitOnStandardInputEOF = true
        worker.connectPublisher = connectPublisher && role == .publisher
        worker.batchBytes = options.batchBytes
        return worker.arguments(command: options.workerCommand)
    }

    func rawThroughput(run: Int) async throws -> RawThroughputRun {
        let result = try await raw.publishSubscribe(tag: "raw-\(run)", stream(count: options.count))
        return RawThroughputRun(
            count: result.count, elapsedNanoseconds: result.elapsedNanoseconds, rate: result.rate, gaps: result.gaps,
            badSize: result.badSize, frameBytes: result.frameBytes)
    }

    func rawRoundTrip() async throws -> RawRoundTrip {
        let result = try await raw.roundTrip(tag: "rtt", count: options.roundTrips, warmup: 1_000, stream(count: options.roundTrips))
        return RawRoundTrip(
            roundTrip: LatencySummary(count: result.count, p50: result.p50, p99: result.p99, max: result.max, mean: result.mean),
            frameBytes: result.frameBytes)
    }

    /// Raw libzmq through a bare `zmq_proxy` child: the C publisher (XPUB, NODROP) connects to
    /// its frontend, the C subscriber to its backend.
    func brokeredRawThroughput(run: Int) async throws -> RawThroughputRun {
        let proxy = try await group.start(
            label: "raw proxy (nbus-baseline proxy)", executable: options.baselineExecutable,
            arguments: [
                "proxy", "--endpoint", raw.endpoint("raw-\(run)-frontend"), "--backend", raw.endpoint("raw-\(run)-backend"),
                "--hwm", "1000000", "--timeout", "\(options.timeoutSeconds)", "--exit-on-stdin-eof",
            ],
            timeout: childTimeout)
        defer { proxy.kill() }
        guard let line = await proxy.waitForLine(where: { $0.contains(#""event":"bound""#) }),
            let bound = ChildProcess.decode(ProxyBoundLine.self, line)
        else {
            throw BenchError.childFailed(label: proxy.label, status: "no bound line", stderr: proxy.stderrText)
        }
        let result = try await raw.publishSubscribe(
            tag: "raw-\(run)", stream(count: options.count), through: (bound.endpoint, bound.backend))
        return RawThroughputRun(
            count: result.count, elapsedNanoseconds: result.elapsedNanoseconds, rate: result.rate, gaps: result.gaps,
            badSize: result.badSize, frameBytes: result.frameBytes)
    }

    /// The bus through an `nbus broker` child with its defaults: the publisher worker connects to
    /// its frontend (the bus's brokered defaults), the subscriber worker to its backend.
    func brokeredBusThroughput(run: Int) async throws -> BusThroughputRun {
        let executable = options.nbusExecutable
        let broker = try await group.start(
            label: "nbus broker", executable: executable,
            arguments: ["broker", "--frontend", raw.endpoint("bus-\(run)-frontend"), "--backend", raw.endpoint("bus-\(run)-backend")],
            timeout: childTimeout)
        defer { broker.kill() }
        // "broker: frontend <endpoint> backend <endpoint>"
        guard let line = await broker.waitForLine(where: { $0.hasPrefix("broker: frontend ") }) else {
            throw BenchError.childFailed(label: broker.label, status: "no banner", stderr: broker.stderrText)
        }
        let words = line.split(separator: " ").map(String.init)
        guard words.count >= 5, words[1] == "frontend", words[3] == "backend" else {
            throw BenchError.badOutput(label: broker.label, output: line, stderr: broker.stderrText)
        }
        let (frontend, backend) = (words[2], words[4])
        let publisherArguments = workerArguments(
            .publisher, endpoint: frontend, count: options.count, rate: nil, paced: false, connectPublisher: true)
        let pair = try await group.runPair(
            binder: ("bus publisher (connected to the broker)", executable, publisherArguments),
            connector: ("bus subscriber", executable, { _ in
                workerArguments(.subscriber, endpoint: backend, count: options.count, rate: nil, paced: false)
            }),
            timeout: childTimeout, acceptFailedConnector: true)
        let result = try pair.connector.requireResult(BusSubscriberResult.self, event: "result")
        let published = pair.binder.lastResult(BusPublisherResult.self, event: "done")
        return BusThroughputRun(subscriber: result, publisher: published, subscriberStderr: pair.connector.stderrText)
    }

    func busThroughput(
        tag: String, count: Int, rate: Int?, spin: Int = 0, plainTask: Bool = false
    ) async throws -> BusThroughputRun {
        let executable = options.nbusExecutable
        let pair = try await group.runPair(
            binder: ("bus publisher", executable,
                     workerArguments(
                         .publisher, endpoint: raw.endpoint(tag), count: count, rate: rate, paced: rate != nil, spin: spin)),
            connector: ("bus subscriber", executable,
                        { workerArguments(
                            .subscriber, endpoint: $0, count: count, rate: nil, paced: rate != nil, spin: spin,
                            plainTask: plainTask) }),
            timeout: childTimeout, acceptFailedConnector: true)
        let result = try pair.connector.requireResult(BusSubscriberResult.self, event: "result")
        let published = pair.binder.lastResult(BusPublisherResult.self, event: "done")
        return BusThroughputRun(subscriber: result, publisher: published, subscriberStderr: pair.connector.stderrText)
    }
}

/// A proxy's first line: both endpoints it bound.
private struct ProxyBoundLine: Decodable {
    let endpoint: String
    let backend: String
}
