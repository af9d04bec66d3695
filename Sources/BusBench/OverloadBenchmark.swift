import Foundation
import NotificationBus

/// What `nbus bench overload` runs: a publisher posting as fast as it can with the bus's default
/// configuration, against a subscriber whose handler is deliberately slow.
package struct OverloadOptions: Sendable {
    /// The notification name the publisher posts.
    package static let notificationName = "bench.overload"

    /// Seconds of posting.
    package var seconds: Double = 60
    /// Payload bytes per notification.
    package var size = 4_096
    /// The subscriber's busy work per notification, microseconds.
    package var handlerMicroseconds = 100
    /// The subscriber's buffering policy and capacity.
    package var policy = OverloadPolicy.dropOldest
    package var buffer = 8_192
    /// ZeroMQ HWMs, both processes: the bus's default unless changed.
    package var highWaterMark: Int32 = BusConfiguration().sendHighWaterMark
    /// The publisher's close timeout (flush and end-of-stream acknowledgement): the bus's default unless changed.
    package var closeTimeoutMilliseconds: Int32 = BusConfiguration().closeTimeoutInMilliseconds
    /// The subscriber's peak RSS must stay below this, bytes (200 MB, decimal).
    package var rssLimitBytes: UInt64 = 200_000_000
    /// RSS sampling interval (subscriber itself, and the runner reading /proc/<pid>/status).
    package var sampleIntervalMilliseconds = 250
    /// Seconds each child may take beyond `seconds` before it is killed (the command then fails).
    package var timeoutSeconds = 120
    /// The `nbus` executable to start workers from (normally this process's own executable).
    package var nbusExecutable: String
    /// The arguments that select the hidden worker command of `nbusExecutable`.
    package var workerCommand: [String]

    package init(workerCommand: [String] = BenchWorkerCommand.nbusSubcommand) {
        nbusExecutable = ThroughputOptions.currentExecutable()
        self.workerCommand = workerCommand
    }

    /// Checks the values; throws `.invalidOptions` with what is wrong (before anything starts).
    package func validate() throws(BenchError) {
        guard seconds > 0 else { throw .invalidOptions("--seconds must be positive") }
        guard (0...WireFormat.defaultMaximumPayload).contains(size) else {
            throw .invalidOptions("--size must be 0...\(WireFormat.defaultMaximumPayload)")
        }
        guard handlerMicroseconds >= 0 else { throw .invalidOptions("--handler-time must be >= 0") }
        guard buffer >= 1 else { throw .invalidOptions("--buffer must be at least 1") }
        guard highWaterMark >= 0 else { throw .invalidOptions("--hwm must be >= 0 (0: unbounded)") }
        guard closeTimeoutMilliseconds >= 0 else { throw .invalidOptions("--close-timeout must be >= 0") }
        guard timeoutSeconds >= 1 else { throw .invalidOptions("--timeout must be at least 1 second") }
        guard sampleIntervalMilliseconds >= 1 else { throw .invalidOptions("--sample-ms must be at least 1") }
    }

    /// Each worker's own deadline, seconds.
    var workerTimeoutSeconds: Int { Int(seconds.rounded(.up)) + timeoutSeconds }
}

/// `nbus bench overload`: bounded memory under overload, with every loss counted.
///
/// Two worker processes of `nbus` over ipc: the publisher (default `BusConfiguration`: HWMs
/// 10000, no back-pressure, so its XPUB drops at the HWM) posts 4 KiB notifications as fast as it
/// can for `seconds`, then closes (its close sends the end-of-stream record that lets the
/// subscriber count a lost tail); the subscriber consumes `events(named:buffering:)` in one
/// `for await` loop that busy-waits `handlerMicroseconds` per notification, and samples its own
/// RSS. The runner samples both children's `/proc/<pid>/status` too. Every child is bounded by a
/// timeout and killed on every exit path.
package enum OverloadBenchmark {
    /// Runs the benchmark; `progress` receives one line per step (for stderr).
    ///
    /// Throws `BenchError` when a child fails, times out or reports nothing. An identity that does
    /// not hold or an RSS over the limit do not throw: they are in `report.failures`.
    package static func run(
        _ options: OverloadOptions, progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> OverloadReport {
        try options.validate()
        let group = ChildGroup()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("nbus-overload-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer {
            group.killAll()
            // Cleanup of a scratch folder under the temp dir: a leftover costs nothing and must not hide
            // the result or the error on its way out.
            try? FileManager.default.removeItem(at: folder)
        }
        return try await withTaskCancellationHandler {
            let report = try await runPair(options, group: group, folder: folder.path, progress: progress)
            try Task.checkCancellation()
            return report
        } onCancel: {
            group.killAll()
        }
    }

    private static func workerArguments(
        _ options: OverloadOptions, role: OverloadWorkerOptions.Role, endpoint: String
    ) -> [String] {
        var worker = OverloadWorkerOptions(role: role, endpoint: endpoint)
        worker.seconds = options.seconds
        worker.size = options.size
        worker.handlerMicroseconds = options.handlerMicroseconds
        worker.policy = options.policy
        worker.buffer = options.buffer
        worker.highWaterMark = options.highWaterMark
        worker.closeTimeoutMilliseconds = options.closeTimeoutMilliseconds
        worker.sampleIntervalMilliseconds = options.sampleIntervalMilliseconds
        worker.timeoutSeconds = options.workerTimeoutSeconds
        worker.exitOnStandardInputEOF = true
        return worker.arguments(command: options.workerCommand)
    }

    private static func runPair(
        _ options: OverloadOptions, group: ChildGroup, folder: String, progress: @escaping @Sendable (String) -> Void
    ) async throws -> OverloadReport {
        let childTimeout = Duration.seconds(options.workerTimeoutSeconds + 10)
        let started = Timestamps.monotonicNanoseconds()
        let executable = options.nbusExecutable

        let publisher = try await group.start(
            label: "overload publisher", executable: executable,
            arguments: workerArguments(options, role: .publisher, endpoint: "ipc://\(folder)/overload.sock"),
            timeout: childTimeout)
        guard let line = await publisher.waitForLine(where: { $0.contains(#""event":"bound""#) }),
            let endpoint = ChildProcess.decode(BoundLine.self, line)?.endpoint
        else {
            if !publisher.isStdoutEnded { publisher.kill() }
            let end = await publisher.waitForExit()
            throw BenchError.childFailed(
                label: publisher.label, status: end.description + ", without reporting its endpoint",
                stderr: publisher.stderrText)
        }
        progress("publisher bound at \(endpoint)")
        let subscriber = try await group.start(
            label: "overload subscriber", executable: executable,
            arguments: workerArguments(options, role: .subscriber, endpoint: endpoint), timeout: childTimeout)
        let subscriberMemory = MemorySampler(pid: subscriber.pid, intervalMilliseconds: options.sampleIntervalMilliseconds)
        let publisherMemory = MemorySampler(pid: publisher.pid, intervalMilliseconds: options.sampleIntervalMilliseconds)
        subscriberMemory.start()
        publisherMemory.start()
        defer {
            subscriberMemory.stop()
            publisherMemory.stop()
        }
        progress(
            "subscriber started (\(options.policy.rawValue), capacity \(options.buffer), handler \(options.handlerMicroseconds) us); "
                + "the publisher posts for \(options.seconds) s once it sees the subscription")

        // Progress every 10 s while the pair runs (printing only).
        let ticker = Task {
            var elapsed = 0
            while !Task.isCancelled {
                // Printing pace only; cancelled when the pair ends, which the check below sees.
                try? await Task.sleep(for: .seconds(10))
                if Task.isCancelled { return }
                elapsed += 10
                let memory = subscriberMemory.samples
                progress(
                    "  \(elapsed) s: subscriber RSS \(kibibytesAsMegabytes(memory.lastResidentKiB)) (peak \(kibibytesAsMegabytes(memory.peakResidentKiB))), "
                        + "publisher RSS \(kibibytesAsMegabytes(publisherMemory.samples.lastResidentKiB))")
            }
        }
        defer { ticker.cancel() }

        // Whichever fails first takes the other down, so nobody waits for its timeout.
        let subscriberWatch = Task { () -> ChildProcess.Termination in
            let end = await subscriber.waitForExit()
            if !end.succeeded { publisher.kill() }
            return end
        }
        let publisherEnd = await publisher.waitForExit()
        if !publisherEnd.succeeded {
            subscriber.kill()
            let subscriberEnd = await subscriberWatch.value
            if publisherEnd.killed && !subscriberEnd.succeeded {
                throw BenchError.childFailed(
                    label: subscriber.label, status: subscriberEnd.description, stderr: subscriber.stderrText)
            }
            throw BenchError.childFailed(label: publisher.label, status: publisherEnd.description, stderr: publisher.stderrText)
        }
        guard let published = publisher.lastResult(OverloadPublisherResult.self, event: "done") else {
            subscriber.kill()
            throw BenchError.badOutput(
                label: publisher.label, output: publisher.stdoutLines.joined(separator: "\n"), stderr: publisher.stderrText)
        }
        progress(
            "publisher done: posted \(Format.count(Int(published.posted))) in \(Format.nanoseconds(Double(published.postNanoseconds))) "
                + "(\(Format.rate(published.postRate))/s), close \(Format.nanoseconds(Double(published.closeNanoseconds))), "
                + "endOfStreamUnacknowledged \(published.endOfStreamUnacknowledged)")
        // The subscriber normally ends on the end-of-stream record; this covers the case where none arrives.
        subscriber.writeLine(OverloadWorker.publisherExitedLine)
        let subscriberEnd = await subscriberWatch.value
        guard subscriberEnd.succeeded else {
            throw BenchError.childFailed(label: subscriber.label, status: subscriberEnd.description, stderr: subscriber.stderrText)
        }
        guard let result = subscriber.lastResult(OverloadSubscriberResult.self, event: "result") else {
            throw BenchError.badOutput(
                label: subscriber.label, output: subscriber.stdoutLines.joined(separator: "\n"), stderr: subscriber.stderrText)
        }
        progress("subscriber done: consumed \(Format.count(Int(result.consumed.notifications))), ended by \(result.endedBy)")
        return OverloadReport(
            options: options, publisher: published, subscriber: result, subscriberSeenByRunner: subscriberMemory.stop(),
            publisherSeenByRunner: publisherMemory.stop(), wallNanoseconds: Timestamps.monotonicNanoseconds() - started)
    }
}

/// KiB as decimal megabytes, for messages.
func kibibytesAsMegabytes(_ kibibytes: UInt64) -> String {
    String(format: "%.1f MB", Double(kibibytes) * 1_024 / 1e6)
}
