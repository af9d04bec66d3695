import ArgumentParser
import BusBench
import Foundation

extension ViewContainer: ExpressibleByArgument {}
extension ViewStyle: ExpressibleByArgument {}
extension SweepParameter: ExpressibleByArgument {}
extension ViewsWorker.Role: ExpressibleByArgument {}

/// Writes to stdout at once (unbuffered), so that stdout and stderr do not interleave mid-report.
func writeStandardOutput(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// `nbus bench views`: one scenario, every consumer style side by side.
struct BenchViews: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "views",
        abstract: "onReceive vs task under load: one scenario, every style in its own subscriber process.",
        discussion: """
            Starts a publisher process and one subscriber-host process per style (onReceive; task \
            on the main actor; task off it, a nonisolated handler; task with replay: .all(max:)), \
            each hosting the same views (BusViews) on the same stream. The publisher waits for every \
            host's subscriptions (waitForSubscribers), posts round-robin over --names names at --rate \
            until --count or --seconds, and closes; the hosts then drain and report. Per style: \
            published, delivered, handled, state updates, body evaluations, main-actor busy time, \
            latency, losses by cause, replayed, CPU and peak RSS. Baselines first, in the same \
            invocation: raw libzmq PUB/SUB (nbus-baseline, same transport, rate and payload) and \
            Foundation NotificationCenter in-process; each style is also shown as a multiple of raw \
            libzmq. The output opens with a verdict computed from the run and the run context (a \
            debug build is warned about); --html adds time series sampled every 250 ms per host; each \
            target is judged only in the scenario it is defined for. The accounting identity \
            (published = delivered + lost upstream + lost local \
            buffer + lost hidden + discarded at end) is checked per view; the command exits 2 when it \
            fails, 1 when a child fails, 130 on Ctrl-C (every child stopped first).
            """
    )

    @OptionGroup var scenario: ScenarioArguments
    @OptionGroup var baselines: BaselineArguments
    @OptionGroup var output: ViewsOutputArguments

    func run() async throws {
        var options = ViewsBenchOptions(scenario: try scenario.scenario())
        options.baselineSeconds = baselines.baselineSeconds
        let display = output.display
        let runOptions = options
        let report = try await runInterruptibly(display) {
            try await ViewsBenchmark.run(runOptions, handlers: display.handlers)
        }
        display.finish()
        if let path = output.html {
            try ViewsHTMLReport.page(for: report).write(toFile: path, atomically: true, encoding: .utf8)
            display.step("wrote \(path)")
        }
        if output.json {
            writeStandardOutput(try report.json() + "\n")
        } else if output.csv {
            writeStandardOutput(report.csv())
        } else {
            writeStandardOutput(report.table() + "\n")
        }
        try exitIfChecksFailed(report.failures, heading: "ACCOUNTING IDENTITY FAILED")
    }
}
