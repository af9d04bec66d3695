import Foundation
import NotificationBus
import Synchronization

/// How `nbus bench views` runs its scenario: which binary and command start the workers, and
/// the baselines measured alongside.
package struct ViewsBenchOptions: Sendable {
    /// The scenario every style runs.
    package var scenario: ViewsScenario
    /// The `nbus` executable to start workers from (normally this process's own executable).
    package var nbusExecutable: String
    /// The arguments that select the hidden worker command, `BenchWorkerCommand.nbusSubcommand` unless told otherwise.
    package var workerCommand: [String]
    /// The `nbus-baseline` executable (next to `nbus`, where SwiftPM builds it).
    package var baselineExecutable: String
    /// Seconds of each baseline (raw libzmq at the scenario's rate; Foundation as many posts);
    /// 0 skips them.
    package var baselineSeconds = 2.0

    package init(scenario: ViewsScenario = ViewsScenario(), workerCommand: [String] = BenchWorkerCommand.nbusSubcommand) {
        self.scenario = scenario
        self.nbusExecutable = ThroughputOptions.currentExecutable()
        self.workerCommand = workerCommand
        baselineExecutable = (ThroughputOptions.executableDirectory() as NSString).appendingPathComponent("nbus-baseline")
    }
}

/// `nbus bench views`: one scenario, every style side by side, and the baselines.
///
/// First the baselines: raw libzmq PUB/SUB (`nbus-baseline`, two processes, the scenario's
/// transport, rate, payload and HWM, `baselineSeconds` long) and Foundation `NotificationCenter`
/// in this process. Then a publisher process (`views-worker publisher`) and one subscriber-host
/// process per style (`views-worker host --style ...`), all children of this process bounded by a
/// deadline and stopped on every exit path (a failing child takes the others down at once, and
/// cancelling the calling task stops them all and waits until they are gone). The publisher
/// starts posting only once every host's subscriptions reached it; when it is done, the runner
/// hands each host the publisher's counts on stdin, and each host drains, then reports one JSON line.
package enum ViewsBenchmark {
    /// Runs the scenario; `progress` receives one line per step (for stderr).
    package static func run(
        _ options: ViewsBenchOptions, progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> ViewsReport {
        try await run(options, handlers: BenchProgressHandlers(step: progress))
    }

    /// Runs the scenario; `handlers` get the steps and the posting progress (labelled `label`).
    ///
    /// Throws `BenchError` when a child fails, times out or reports nothing. An accounting
    /// identity that does not hold does not throw: it is in `report.failures`.
    package static func run(
        _ options: ViewsBenchOptions, handlers: BenchProgressHandlers, label: String = "views"
    ) async throws -> ViewsReport {
        try options.scenario.validate()
        let scenario = options.scenario
        return try await withChildren(prefix: "nbus-views") { group, folder in
            let date = Date()
            let started = Timestamps.monotonicNanoseconds()
            let loadBefore = MachineLoad.Sample.now()
            let baselines = try await ViewsBaselines.run(
                scenario: scenario, seconds: options.baselineSeconds, baselineExecutable: options.baselineExecutable,
                group: group, folder: folder, progress: handlers.step)
            var results: [(ScenarioPublisherResult, ScenarioHostResult)] = []
            let batches = scenario.oneAtATime ? scenario.styles.map { [$0] } : [scenario.styles]
            for (index, styles) in batches.enumerated() {
                try Task.checkCancellation()
                let runner = ScenarioRunner(
                    options: options, hosts: styles.map { ScenarioHostSpec(style: $0, subscription: scenario.subscription) },
                    group: group, folder: folder, tag: "\(index)", label: label, handlers: handlers)
                let (publisher, hosts) = try await runner.run()
                results += hosts.map { (publisher, $0) }
            }
            try Task.checkCancellation()
            var context = RunContext.current()
            if let loadBefore, let loadAfter = MachineLoad.Sample.now() {
                context.load = MachineLoad(before: loadBefore, after: loadAfter)
            }
            return ViewsReport(
                scenario: scenario, date: date, wallNanoseconds: Timestamps.monotonicNanoseconds() - started, results: results,
                baselines: baselines, context: context)
        }
    }

    /// Runs `body` with a fresh `ChildGroup` and temp folder. On every way out (result, error,
    /// cancellation) every child is stopped and waited for, and the folder removed.
    static func withChildren<T: Sendable>(
        prefix: String, _ body: @Sendable (ChildGroup, String) async throws -> T
    ) async throws -> T {
        let group = ChildGroup()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        do {
            let result = try await withTaskCancellationHandler {
                try await body(group, folder.path)
            } onCancel: {
                group.killAll()
            }
            await group.stopAll()
            // Cleanup of a scratch folder under the temp dir: a leftover costs nothing and must not hide
            // the result.
            try? FileManager.default.removeItem(at: folder)
            return result
        } catch {
            await group.stopAll()
            // As above: cleanup must not replace the error being reported.
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }
}

/// One subscriber host of a scenario run: its style and which names its views subscribe to.
struct ScenarioHostSpec: Sendable, Equatable {
    var style: ViewStyle
    var subscription: ViewSubscription

    /// How the host is named in messages.
    var label: String {
        subscription == .spread
            ? "views host \(style.rawValue) (views-worker host)"
            : "views host \(style.rawValue), subscribed to \(subscription.rawValue) (views-worker host)"
    }
}

/// One publisher and its hosts.
struct ScenarioRunner: Sendable {
    let options: ViewsBenchOptions
    let hosts: [ScenarioHostSpec]
    let group: ChildGroup
    let folder: String
    let tag: String
    let label: String
    let handlers: BenchProgressHandlers

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

    private func publisherArguments() -> [String] {
        ViewsWorkerOptions(
            scenario: scenario, role: .publisher, endpoint: endpoint, hostSubscriptions: hosts.map(\.subscription)
        ).arguments(command: options.workerCommand)
    }

    private func hostArguments(_ host: ScenarioHostSpec, endpoint: String) -> [String] {
        var hostScenario = scenario
        hostScenario.subscription = host.subscription
        return ViewsWorkerOptions(scenario: hostScenario, role: .host, endpoint: endpoint, style: host.style)
            .arguments(command: options.workerCommand)
    }

    func run() async throws -> (ScenarioPublisherResult, [ScenarioHostResult]) {
        let failures = FirstFailure()
        let executable = options.nbusExecutable
        let posted = Mutex(0)
        let publisher = try await group.start(
            label: "views publisher (views-worker publisher)", executable: executable, arguments: publisherArguments(),
            timeout: childTimeout,
            onLine: { line in
                guard line.contains(#""event":"progress""#),
                    let progress = ChildProcess.decode(ViewsWorker.ProgressLine.self, line)
                else { return }
                posted.withLock { $0 = progress.posted }
            })
        watch(publisher, failures)
        guard let line = await publisher.waitForLine(where: { $0.contains(#""event":"bound""#) }),
            let bound = ChildProcess.decode(BoundLine.self, line)?.endpoint
        else {
            throw await failure(of: publisher, failures, what: "without reporting its endpoint")
        }
        var children: [ChildProcess] = []
        for host in hosts {
            let child = try await group.start(
                label: host.label, executable: executable, arguments: hostArguments(host, endpoint: bound),
                timeout: childTimeout)
            watch(child, failures)
            children.append(child)
        }
        for child in children {
            guard await child.waitForLine(where: { $0.contains(#""event":"ready""#) }) != nil else {
                throw await failure(of: child, failures, what: "before it was ready")
            }
        }
        // Every host has its baseline: let the publisher post.
        publisher.writeLine(ViewsWorker.goLine)
        guard await publisher.waitForLine(where: { $0.contains(#""event":"started""#) }) != nil else {
            throw await failure(of: publisher, failures, what: "before it started posting")
        }
        let rateText = scenario.rate.map { "\(Format.count($0))/s" } ?? "as fast as it can"
        let names = Set(hosts.map(\.style.rawValue)).count == hosts.count
            ? hosts.map(\.style.rawValue) : hosts.map { "\($0.style.rawValue)/\($0.subscription.rawValue)" }
        handlers.step(
            "\(names.joined(separator: ", ")): \(children.count) host(s) ready; publishing \(rateText) "
                + "for up to \(ViewsScenario.number(scenario.seconds)) s")
        let label = self.label
        let handlers = self.handlers
        let planned = (seconds: scenario.seconds, count: scenario.count)
        let ticker = Task {
            let clock = ContinuousClock()
            let start = clock.now
            while !Task.isCancelled {
                // Printing pace only; cancelled when the run ends, which the check below sees.
                try? await Task.sleep(for: .milliseconds(250))
                if Task.isCancelled { return }
                let elapsed = clock.now - start
                handlers.posting(
                    PostingProgress(
                        run: label, elapsedSeconds: Double(elapsed.nanoseconds) / 1e9, plannedSeconds: planned.seconds,
                        posted: posted.withLock { $0 }, plannedCount: planned.count))
            }
        }
        let publisherEnd = await publisher.waitForExit()
        ticker.cancel()
        guard publisherEnd.succeeded else { throw await failure(of: publisher, failures, what: nil) }
        let done = try publisher.requireResult(ScenarioPublisherResult.self, event: "done")
        handlers.posting(
            PostingProgress(
                run: label, elapsedSeconds: Double(done.postNanoseconds) / 1e9, plannedSeconds: planned.seconds,
                posted: Int(done.posted), plannedCount: planned.count))
        handlers.step(
            "publisher done: \(Format.count(Int(done.posted))) posted in "
                + "\(Format.nanoseconds(Double(done.postNanoseconds))) (\(Format.rate(done.postRate))/s, stopped by "
                + "\(done.stoppedBy)); hosts draining")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let publishedLine = ViewsWorker.publishedPrefix + String(decoding: try encoder.encode(done), as: UTF8.self)
        for child in children { child.writeLine(publishedLine) }
        var results: [ScenarioHostResult] = []
        for child in children {
            let end = await child.waitForExit()
            guard end.succeeded else { throw await failure(of: child, failures, what: nil) }
            results.append(try child.requireResult(ScenarioHostResult.self, event: "result"))
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
        for _ in 0..<20 where failures.first == nil {
            // At most 200 ms, and only a pause: cancelled, it ends at once and the failure is reported as is.
            try? await Task.sleep(for: .milliseconds(10))
        }
        if let first = failures.first { return first }
        let status = end.description + (what.map { ", " + $0 } ?? "")
        return .childFailed(label: child.label, status: status, stderr: child.stderrText)
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
