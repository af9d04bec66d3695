import Foundation
import NotificationBus

/// What `nbus bench filter` runs: one publisher over many names, and two subscriber hosts with the
/// same views in the same style, one subscribed to the first name only, one to every name.
package struct FilterBenchOptions: Sendable {
    /// Checks the values; throws `.invalidOptions` with what is wrong (before anything starts).
    package func validate() throws(BenchError) {
        _ = try validatedScenario()
    }

    /// The scenario both hosts run: this one's, with one style, spread subscriptions.
    func validatedScenario() throws(BenchError) -> ViewsScenario {
        var scenario = self.scenario
        scenario.styles = [style]
        scenario.oneAtATime = false
        scenario.subscription = .spread
        try scenario.validate()
        guard scenario.names >= 2 else { throw .invalidOptions("--names must be at least 2 to compare one name with all") }
        guard targetRatio > 0 else { throw .invalidOptions("--target must be positive") }
        return scenario
    }

    /// The scenario both hosts run (its `subscription` and `styles` are set per host).
    package var scenario: ViewsScenario
    /// The consumer style of both hosts' views.
    package var style: ViewStyle
    /// The target: the one-name host's CPU at most this fraction of the all-names host's.
    package var targetRatio = 0.05
    /// The `nbus` executable and the arguments of its hidden views worker command.
    package var nbusExecutable: String
    package var workerCommand: [String]

    /// The comparison: 100 names at 20k msg/s for 10 s, one view per host in a stack (always
    /// visible), the off-main `task` style, 10% selectivity, 20 us body.
    package init(workerCommand: [String] = BenchWorkerCommand.nbusSubcommand) {
        scenario = Self.defaultScenario()
        style = .taskOffMain
        nbusExecutable = ThroughputOptions.currentExecutable()
        self.workerCommand = workerCommand
    }

    /// The default scenario of the comparison.
    package static func defaultScenario() -> ViewsScenario {
        var scenario = ViewsScenario()
        scenario.names = 100
        scenario.views = 1
        scenario.container = .none
        scenario.churnMilliseconds = 0
        scenario.rate = 20_000
        scenario.seconds = 10
        scenario.selectivity = 0.1
        scenario.bodyMicroseconds = 20
        scenario.pingMainActor = false
        return scenario
    }
}

/// `nbus bench filter`: filtered handling at the socket. The same publisher stream reaches two
/// subscriber-host processes side by side: A's views subscribe to one name exactly (ZeroMQ filters
/// the other names at the publisher, so they never reach A), B's to every name (`bench.views.>`).
/// Each host measures its own CPU time over its window (getrusage); the report gives A / B against
/// the target, and checks the accounting identity of both.
package enum FilterBenchmark {
    /// Runs the comparison; `handlers` get the steps and the posting progress (labelled `filter`).
    package static func run(_ options: FilterBenchOptions, handlers: BenchProgressHandlers = .silent) async throws -> FilterReport {
        let scenario = try options.validatedScenario()
        var bench = ViewsBenchOptions(scenario: scenario, workerCommand: options.workerCommand)
        bench.nbusExecutable = options.nbusExecutable
        bench.baselineSeconds = 0
        let runOptions = bench
        let runScenario = scenario
        return try await ViewsBenchmark.withChildren(prefix: "nbus-filter") { group, folder in
            let date = Date()
            let started = Timestamps.monotonicNanoseconds()
            let runner = ScenarioRunner(
                options: runOptions,
                hosts: [
                    ScenarioHostSpec(style: options.style, subscription: .one),
                    ScenarioHostSpec(style: options.style, subscription: .all),
                ],
                group: group, folder: folder, tag: "filter", label: "filter", handlers: handlers)
            let (publisher, hosts) = try await runner.run()
            guard let one = hosts.first(where: { $0.subscription == .one }),
                let all = hosts.first(where: { $0.subscription == .all })
            else {
                throw BenchError.badOutput(label: "filter hosts", output: "\(hosts.map(\.subscription))", stderr: "")
            }
            return FilterReport(
                scenario: runScenario, style: options.style, targetRatio: options.targetRatio, date: date,
                wallNanoseconds: Timestamps.monotonicNanoseconds() - started, publisher: publisher, one: one, all: all)
        }
    }
}
