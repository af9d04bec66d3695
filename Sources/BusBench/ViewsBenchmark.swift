import Foundation
import NotificationBus
import Synchronization

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
