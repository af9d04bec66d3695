import ArgumentParser
import BusBench
import Foundation

/// `nbus bench filter`: subscriber CPU with views on one of many names against views on all of them.
struct BenchFilter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filter",
        abstract: "Filtered handling at the socket: subscriber CPU, views on 1 of --names names vs on all of them.",
        discussion: """
            One publisher posts round-robin over --names names at --rate; two subscriber-host processes \
            run side by side on that stream with the same views in the same --style: A's views subscribe \
            to the first name exactly (ZeroMQ filters the other names at the publisher), B's to every name \
            (one bench.views.> pattern each). Each host measures its own CPU time (getrusage) from ready \
            to drained; the command prints A / B against the target (--target, 5%) and checks the \
            accounting identity of both. Exits 2 when an identity fails, 1 when a child fails; the \
            target's verdict is printed, not an exit status (it is a speed figure).
            """
    )

    @Option(parsing: .unconditional, help: "Names the publisher posts round-robin to.")
    var names: Int = 100

    @Option(help: "Notifications per second over all names, or max.")
    var rate: String = "20000"

    @Option(parsing: .unconditional, help: "Seconds of posting.")
    var seconds: Double = 10

    @Option(parsing: .unconditional, help: "Stop after this many notifications, if sooner.")
    var count: Int = 1_000_000

    @Option(parsing: .unconditional, help: "Views per host (A's all on the first name, B's each on every name).")
    var views: Int = 1

    @Option(help: "The consumer style of both hosts: onReceive, task-main, task-off-main, task-replay.")
    var style: ViewStyle = .taskOffMain

    @Option(parsing: .unconditional, help: "Payload bytes.")
    var size: Int = 64

    @Option(help: "Fraction of each name's notifications that pass the views' condition (0.1 or 10%).")
    var selectivity: String = "0.1"

    @Option(name: .customLong("body-time"), parsing: .unconditional, help: ArgumentHelp(
        "Busy work per body evaluation, seconds (default: 0.00002, 20 us).", valueName: "seconds"))
    var bodyTime: Double?

    @Option(help: "Transport between the processes: ipc or tcp.")
    var transport: ThroughputOptions.Transport = .ipc

    @Option(help: "The target: A's CPU at most this fraction of B's (0.05 or 5%).")
    var target: String = "0.05"

    @OptionGroup var output: BenchJSONOption

    /// Whether to print one JSON object instead of the table.
    var json: Bool { output.json }

    @Flag(inversion: .prefixedNo, help: "A progress bar on stderr while the publisher posts. Default: on, off with --format json.")
    var progress: Bool?

    @Flag(help: "Nothing on stderr but errors.")
    var quiet = false

    func validate() throws {
        try SecondsOption.check(seconds, "--seconds", in: 0.001...86_400)
        try checkBenchOptions { try makeOptions().validate() }
    }

    func makeOptions() throws -> FilterBenchOptions {
        var options = FilterBenchOptions()
        var scenario = options.scenario
        scenario.transport = transport
        scenario = try SweepParameter.rate.apply(rate, to: scenario)
        scenario = try SweepParameter.selectivity.apply(selectivity, to: scenario)
        scenario.names = names
        scenario.seconds = seconds
        scenario.count = count
        scenario.views = views
        scenario.size = size
        scenario.bodyMicroseconds = try SecondsOption.span(
            bodyTime, "--body-time", perSecond: 1e6, default: 0.00002, in: 0...1)
        options.scenario = scenario
        options.style = style
        // The same parser as --selectivity: 0.05 or 5%.
        options.targetRatio = try SweepParameter.selectivity.apply(target, to: ViewsScenario()).selectivity
        return options
    }

    func run() async throws {
        let options = try makeOptions()
        let display = ProgressDisplay(steps: !quiet, bar: !quiet && (progress ?? !json))
        let runOptions = options
        let report = try await runInterruptibly(display) {
            try await FilterBenchmark.run(runOptions, handlers: display.handlers)
        }
        display.finish()
        writeStandardOutput((json ? try report.json() : report.table()) + "\n")
        try exitIfChecksFailed(report.failures, heading: "ACCOUNTING IDENTITY FAILED")
    }
}
