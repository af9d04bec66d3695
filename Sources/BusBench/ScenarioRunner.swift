import Foundation
import NotificationBus
import Synchronization

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
