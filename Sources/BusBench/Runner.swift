import Foundation
import NotificationBus

// Internal, not private: ThroughputBenchmark (ThroughputBenchmark.swift) makes and drives it.
/// Starts and reads the child processes of one benchmark.
struct Runner: Sendable {
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
        plainTask: Bool = false, connectPublisher: Bool = false, body: BusWorkerOptions.Body = .bytes
    ) -> [String] {
        var worker = BusWorkerOptions(role: role, endpoint: endpoint, count: count)
        worker.body = body
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
    func brokeredBusThroughput(run: Int, body: BusWorkerOptions.Body = .bytes) async throws -> BusThroughputRun {
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
            .publisher, endpoint: frontend, count: options.count, rate: nil, paced: false, connectPublisher: true, body: body)
        let pair = try await group.runPair(
            binder: ("bus publisher (connected to the broker)", executable, publisherArguments),
            connector: ("bus subscriber", executable, { _ in
                workerArguments(.subscriber, endpoint: backend, count: options.count, rate: nil, paced: false, body: body)
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
