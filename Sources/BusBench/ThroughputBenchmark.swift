import Foundation
import NotificationBus

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

    /// `--typed --topology brokered`: alternating pairs through a broker child, the byte API with
    /// `BenchOrder`'s JSON built by hand against `post(BenchOrder)` decoded by the subscriber.
    static func runTypedBroker(
        _ options: ThroughputOptions, _ progress: @escaping @Sendable (String) -> Void
    ) async throws -> TypedMessagesReport {
        let group = ChildGroup()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("nbus-bench-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer {
            group.killAll()
            // As in `run`: a leftover scratch folder costs nothing and must not hide the result.
            try? FileManager.default.removeItem(at: folder)
        }
        let runner = Runner(options: options, group: group, folder: folder.path)
        var report = TypedMessagesReport(count: options.count, foundationCount: 0, runs: options.runs)
        return try await withTaskCancellationHandler {
            for run in 1...options.runs {
                try Task.checkCancellation()
                // The order rotates each round, so no body always runs first (a warm cache, a
                // quieter machine).
                var bodies: [BusWorkerOptions.Body] = options.typedCodable ? [.json, .typed, .typedCodable] : [.json, .typed]
                let shift = (run - 1) % bodies.count
                bodies = Array(bodies[shift...] + bodies[..<shift])
                for (offset, body) in bodies.enumerated() {
                    let label = body == .json ? "JSON bytes" : body == .typed ? "typed, field coding" : "typed, Codable coding"
                    progress("run \(run)/\(options.runs): through nbus broker, \(label), \(options.count)")
                    let result = try await runner.brokeredBusThroughput(run: run * 3 + offset, body: body)
                    switch body {
                    case .typed: report.brokerTyped.append(result)
                    case .typedCodable: report.brokerTypedCodable.append(result)
                    default: report.brokerJSON.append(result)
                    }
                    progress("  \(Format.rate(result.subscriber.rate))/s")
                }
            }
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
