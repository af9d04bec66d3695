import Foundation
import NotificationBus
import Synchronization

/// How `nbus bench views` runs its scenario: which binary and command start the workers.
public struct ViewsBenchOptions: Sendable {
    /// The scenario every style runs.
    public var scenario: ViewsScenario
    /// The `nbus` executable to start workers from (normally this process's own executable).
    public var nbusExecutable: String
    /// The arguments that select the hidden worker command, e.g. `["bench", "views-worker"]`.
    public var workerCommand: [String]

    public init(scenario: ViewsScenario = ViewsScenario(), workerCommand: [String] = ["bench", "views-worker"]) {
        self.scenario = scenario
        self.nbusExecutable = ThroughputOptions.currentExecutable()
        self.workerCommand = workerCommand
    }
}

/// `nbus bench views`: one scenario, every style side by side.
///
/// Starts a publisher process (`views-worker publisher`) and one subscriber-host process per
/// style (`views-worker host --style ...`), all children of this process bounded by a deadline
/// and killed on every exit path (a failing child takes the others down at once, and cancelling
/// the calling task kills them all). The publisher starts posting only once every host's
/// subscriptions reached it; when it is done, the runner hands each host the publisher's counts
/// on stdin, and each host drains, then reports one JSON line.
public enum ViewsBenchmark {
    /// Runs the scenario; `progress` receives one line per step (for stderr).
    ///
    /// Throws `BenchError` when a child fails, times out or reports nothing. An accounting
    /// identity that does not hold does not throw: it is in `report.failures`.
    public static func run(
        _ options: ViewsBenchOptions, progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> ViewsReport {
        try options.scenario.validate()
        let group = ChildGroup()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("nbus-views-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer {
            group.killAll()
            try? FileManager.default.removeItem(at: folder)
        }
        return try await withTaskCancellationHandler {
            let date = Date()
            let started = Timestamps.monotonicNanoseconds()
            let scenario = options.scenario
            var results: [(ScenarioPublisherResult, ScenarioHostResult)] = []
            let batches = scenario.oneAtATime ? scenario.styles.map { [$0] } : [scenario.styles]
            for (index, styles) in batches.enumerated() {
                try Task.checkCancellation()
                let runner = ScenarioRunner(
                    options: options, styles: styles, group: group, folder: folder.path, tag: "\(index)", progress: progress)
                let (publisher, hosts) = try await runner.run()
                results += hosts.map { (publisher, $0) }
            }
            try Task.checkCancellation()
            return ViewsReport(
                scenario: scenario, date: date, wallNanoseconds: Timestamps.monotonicNanoseconds() - started, results: results)
        } onCancel: {
            group.killAll()
        }
    }
}

/// One publisher and its hosts.
private struct ScenarioRunner: Sendable {
    let options: ViewsBenchOptions
    let styles: [ViewStyle]
    let group: ChildGroup
    let folder: String
    let tag: String
    let progress: @Sendable (String) -> Void

    private var scenario: ViewsScenario { options.scenario }

    private var childTimeout: Duration {
        .seconds(Int(scenario.seconds.rounded(.up)) + scenario.startupSeconds + scenario.drainSeconds + 30)
    }

    private var endpoint: String {
        switch scenario.transport {
        case .ipc: return "ipc://\(folder)/views-\(tag).sock"
        case .tcp: return "tcp://127.0.0.1:*"
        }
    }

    private func arguments(_ role: ViewsWorker.Role, endpoint: String, style: ViewStyle? = nil) -> [String] {
        var arguments = options.workerCommand + [role.rawValue, "--endpoint", endpoint]
        if let style { arguments += ["--style", style.rawValue] }
        arguments += ["--hosts", "\(styles.count)", "--scenario", scenario.encodedArgument(), "--exit-on-stdin-eof"]
        return arguments
    }

    func run() async throws -> (ScenarioPublisherResult, [ScenarioHostResult]) {
        let failures = FirstFailure()
        let executable = options.nbusExecutable
        let publisher = try await group.start(
            label: "views publisher (views-worker publisher)", executable: executable,
            arguments: arguments(.publisher, endpoint: endpoint), timeout: childTimeout)
        watch(publisher, failures)
        guard let line = await publisher.waitForLine(where: { $0.contains(#""event":"bound""#) }),
            let bound = decode(BoundLine.self, line)?.endpoint
        else {
            throw await failure(of: publisher, failures, what: "without reporting its endpoint")
        }
        var hosts: [ChildProcess] = []
        for style in styles {
            let host = try await group.start(
                label: "views host \(style.rawValue) (views-worker host)", executable: executable,
                arguments: arguments(.host, endpoint: bound, style: style), timeout: childTimeout)
            watch(host, failures)
            hosts.append(host)
        }
        for host in hosts {
            guard await host.waitForLine(where: { $0.contains(#""event":"ready""#) }) != nil else {
                throw await failure(of: host, failures, what: "before it was ready")
            }
        }
        // Every host has its baseline: let the publisher post.
        publisher.writeLine(ViewsWorker.goLine)
        guard await publisher.waitForLine(where: { $0.contains(#""event":"started""#) }) != nil else {
            throw await failure(of: publisher, failures, what: "before it started posting")
        }
        let rateText = scenario.rate.map { "\(Format.count($0))/s" } ?? "as fast as it can"
        progress(
            "\(styles.map(\.rawValue).joined(separator: ", ")): \(hosts.count) host(s) ready; publishing \(rateText) "
                + "for up to \(ViewsScenario.number(scenario.seconds)) s")
        let ticker = Task {
            var elapsed = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(5))
                if Task.isCancelled { return }
                elapsed += 5
                progress("  \(elapsed) s")
            }
        }
        let publisherEnd = await publisher.waitForExit()
        ticker.cancel()
        guard publisherEnd.succeeded else { throw await failure(of: publisher, failures, what: nil) }
        guard let done = lastResult(ScenarioPublisherResult.self, in: publisher, event: "done") else {
            throw BenchError.badOutput(
                label: publisher.label, output: publisher.stdoutLines.joined(separator: "\n"), stderr: publisher.stderrText)
        }
        progress(
            "publisher done: \(Format.count(Int(done.posted))) posted in "
                + "\(Format.nanoseconds(Double(done.postNanoseconds))) (\(Format.rate(done.postRate))/s, stopped by "
                + "\(done.stoppedBy)); hosts draining")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let publishedLine = ViewsWorker.publishedPrefix + String(decoding: try encoder.encode(done), as: UTF8.self)
        for host in hosts { host.writeLine(publishedLine) }
        var results: [ScenarioHostResult] = []
        for host in hosts {
            let end = await host.waitForExit()
            guard end.succeeded else { throw await failure(of: host, failures, what: nil) }
            guard let result = lastResult(ScenarioHostResult.self, in: host, event: "result") else {
                throw BenchError.badOutput(
                    label: host.label, output: host.stdoutLines.joined(separator: "\n"), stderr: host.stderrText)
            }
            results.append(result)
        }
        return (done, results)
    }

    /// Whichever child fails first takes the others down, so nobody waits for a timeout.
    private func watch(_ child: ChildProcess, _ failures: FirstFailure) {
        Task {
            let end = await child.waitForExit()
            guard !end.succeeded, !end.killed else { return }
            failures.record(BenchError.childFailed(label: child.label, status: end.description, stderr: child.stderrText))
            group.killAll()
        }
    }

    /// The error to throw now: the first child failure seen, or this child's own.
    private func failure(of child: ChildProcess, _ failures: FirstFailure, what: String?) async -> BenchError {
        if !child.isStdoutEnded { child.kill() }
        let end = await child.waitForExit()
        // Give the watchers a moment to record a failure that caused this one (pacing only).
        for _ in 0..<20 where failures.first == nil { try? await Task.sleep(for: .milliseconds(10)) }
        if let first = failures.first { return first }
        let status = end.description + (what.map { ", " + $0 } ?? "")
        return .childFailed(label: child.label, status: status, stderr: child.stderrText)
    }

    private func lastResult<T: Decodable>(_ type: T.Type, in child: ChildProcess, event: String) -> T? {
        child.stdoutLines.reversed().lazy
            .filter { $0.contains(#""event":"\#(event)""#) }
            .compactMap { decode(type, $0) }
            .first
    }

    private func decode<T: Decodable>(_ type: T.Type, _ line: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(line.utf8))
    }
}

/// The first child failure of a run.
private final class FirstFailure: Sendable {
    private let state = Mutex<BenchError?>(nil)

    func record(_ error: BenchError) {
        state.withLock { if $0 == nil { $0 = error } }
    }

    var first: BenchError? { state.withLock { $0 } }
}
