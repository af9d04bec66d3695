import ArgumentParser
import BusBench
import Foundation

/// `nbus bench sweep`: the views scenario over several values of one parameter.
struct BenchSweep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "Run the views scenario for several values of one parameter (selectivity, rate, views, churn).",
        discussion: """
            Runs `nbus bench views` once per value (every other option as given) and reports the \
            grid; --html charts every figure against the swept parameter. Values: selectivity 0.01 \
            or 1%, rate 20000 / 20k / max, views 30, churn in seconds: 0.25 (0: none). Exits 2 when the \
            accounting identity fails in any run.
            """
    )

    @Option(help: "The parameter to vary: selectivity, rate, views or churn.")
    var param: SweepParameter

    @Option(help: "Comma-separated values, e.g. 0.01,0.1,0.5.")
    var values: String

    @OptionGroup var scenario: ScenarioArguments
    @OptionGroup var baselines: BaselineArguments
    @OptionGroup var output: ViewsOutputArguments

    /// The values, each checked against the scenario, before anything starts.
    func validate() throws {
        let base = try scenario.scenario()
        guard !valueList.isEmpty else { throw ValidationError("--values needs at least one value") }
        try checkBenchOptions {
            for value in valueList { _ = try param.apply(value, to: base) }
        }
    }

    var valueList: [String] { values.split(separator: ",").map(String.init) }

    func run() async throws {
        let base = try scenario.scenario()
        let list = valueList
        var options = ViewsBenchOptions(scenario: base)
        options.baselineSeconds = baselines.baselineSeconds
        let display = output.display
        let parameter = param
        let runOptions = options
        let sweep = try await runInterruptibly(display) {
            try await ViewsSweep.run(parameter: parameter, values: list, options: runOptions, handlers: display.handlers)
        }
        display.finish()
        if let path = output.html {
            try ViewsHTMLReport.page(for: sweep).write(toFile: path, atomically: true, encoding: .utf8)
            display.step("wrote \(path)")
        }
        if output.json {
            writeStandardOutput(try sweep.json() + "\n")
        } else if output.csv {
            writeStandardOutput(sweep.csv())
        } else {
            writeStandardOutput(sweep.table() + "\n")
        }
        try exitIfChecksFailed(sweep.failures, heading: "ACCOUNTING IDENTITY FAILED")
    }
}
