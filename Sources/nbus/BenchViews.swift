import ArgumentParser
import BusBench
import Foundation

extension ViewContainer: ExpressibleByArgument {}
extension ViewStyle: ExpressibleByArgument {}
extension SweepParameter: ExpressibleByArgument {}
extension ViewsWorker.Role: ExpressibleByArgument {}

/// The scenario options `bench views` and `bench sweep` share.
struct ScenarioArguments: ParsableArguments {
    @Option(help: "Transport between the processes: ipc or tcp.")
    var transport: ThroughputOptions.Transport = .ipc

    @Option(help: "Notifications per second over all names, or max (as fast as post returns).")
    var rate: String = "20000"

    @Option(parsing: .unconditional, help: "Payload bytes (the first byte says whether the notification matches).")
    var size: Int = 64

    @Option(parsing: .unconditional, help: "Names the publisher posts round-robin to; view i subscribes to name i % names.")
    var names: Int = 30

    @Option(help: "Fraction of each name's notifications that pass the views' condition (0.1 or 10%).")
    var selectivity: String = "0.1"

    @Option(parsing: .unconditional, help: "Views per subscriber host.")
    var views: Int = 30

    @Option(help: "What holds the views: none (a stack, all visible), tabs or list.")
    var container: ViewContainer = .tabs

    @Option(parsing: .unconditional, help: "Tabs (or list pages: the list window is views/tabs rows).")
    var tabs: Int = 3

    @Option(name: .customLong("churn-interval"), parsing: .unconditional, help: ArgumentHelp(
        "Switch tab / scroll the list every this many seconds (default: 0.25; 0: never).", valueName: "seconds"))
    var churnInterval: Double?

    @Option(name: .customLong("body-time"), parsing: .unconditional, help: ArgumentHelp(
        "Busy work per body evaluation, seconds (default: 0.00002, 20 us).", valueName: "seconds"))
    var bodyTime: Double?

    @Option(parsing: .unconditional, help: "Stop after this many notifications ...")
    var count: Int = 1_000_000

    @Option(parsing: .unconditional, help: "... or after this many seconds of posting, whichever comes first.")
    var seconds: Double = 10

    @Option(name: .customLong("replay-max"), parsing: .unconditional, help: "The bound of the replay style's replay: .all(max:).")
    var replayMax: Int = 4_096

    @Option(parsing: .unconditional, help: "Each view's subscription buffer (suspendProducer capacity).")
    var buffer: Int = 8_192

    @Option(parsing: .unconditional, help: "ZeroMQ send/receive high-water mark, every process.")
    var hwm: Int32 = 10_000

    @Flag(help: "Publisher back-pressure (lossless; the slowest host then paces everyone).")
    var backpressure = false

    @Option(help: "Comma-separated styles: onReceive, task-main, task-off-main, task-replay.")
    var styles: String = ViewStyle.allCases.map(\.rawValue).joined(separator: ",")

    @Flag(name: .customLong("one-at-a-time"), help: "Run each style with its own publisher run instead of side by side.")
    var oneAtATime = false

    @Option(name: .customLong("drain-seconds"), parsing: .unconditional, help: "Seconds the hosts may take to drain after the publisher is done.")
    var drainSeconds: Int = 60

    @Option(name: .customLong("stall-seconds"), parsing: .unconditional, help: "Seconds without progress after which a draining host reports anyway.")
    var stallSeconds: Int = 5

    func validate() throws {
        try SecondsOption.check(seconds, "--seconds", in: 0.001...86_400)
        try checkBenchOptions { _ = try scenario() }
    }

    func scenario() throws -> ViewsScenario {
        var scenario = ViewsScenario()
        scenario.transport = transport
        scenario = try SweepParameter.rate.apply(rate, to: scenario)
        scenario.size = size
        scenario.names = names
        scenario = try SweepParameter.selectivity.apply(selectivity, to: scenario)
        scenario.views = views
        scenario.container = container
        scenario.tabs = tabs
        scenario.churnMilliseconds = try SecondsOption.span(
            churnInterval, "--churn-interval", perSecond: 1e3,
            default: 0.25, in: 0...3_600)
        scenario.bodyMicroseconds = try SecondsOption.span(
            bodyTime, "--body-time", perSecond: 1e6, default: 0.00002, in: 0...1)
        scenario.count = count
        scenario.seconds = seconds
        scenario.replayMax = replayMax
        scenario.buffer = buffer
        scenario.highWaterMark = hwm
        scenario.backpressure = backpressure
        scenario.styles = try styles.split(separator: ",").map { text in
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let style = ViewStyle(rawValue: trimmed) else {
                throw ValidationError("unknown style '\(trimmed)' (onReceive, task-main, task-off-main, task-replay)")
            }
            return style
        }
        scenario.oneAtATime = oneAtATime
        scenario.drainSeconds = drainSeconds
        scenario.stallSeconds = stallSeconds
        try scenario.validate()
        return scenario
    }
}

/// Output options `bench views` and `bench sweep` share.
struct ViewsOutputArguments: ParsableArguments {
    @Option(help: ArgumentHelp(
        "text (the table, default), json (one object) or csv (a header and one line per style), on stdout.",
        valueName: "format"))
    var format: BenchFormat?

    @Option(help: ArgumentHelp("Also write a self-contained HTML report with SVG charts here.", valueName: "path"))
    var html: String?

    @Flag(
        inversion: .prefixedNo,
        help: """
            A progress bar on stderr while the publisher posts (in place on a terminal, a line every \
            5 s otherwise). Default: on for the table, off with --format json or csv.
            """)
    var progress: Bool?

    @Flag(help: "Nothing on stderr but errors: no step lines, no progress.")
    var quiet = false

    /// The format asked for (the table by default).
    var outputFormat: BenchFormat { format ?? .text }
    var json: Bool { outputFormat == .json }
    var csv: Bool { outputFormat == .csv }

    /// Step lines unless --quiet; the bar when asked, or by default for the table.
    var display: ProgressDisplay {
        ProgressDisplay(steps: !quiet, bar: !quiet && (progress ?? !(json || csv)))
    }
}

/// What the benchmarks print on stdout: the table, one JSON object, or (views, sweep) CSV.
enum BenchFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, csv
}

/// `--format text|json` of the benchmarks that print a table or one JSON object.
struct BenchJSONOption: ParsableArguments {
    @Option(help: ArgumentHelp("text (the table, default) or json (one object), on stdout.", valueName: "format"))
    var format: BenchFormat?

    func validate() throws {
        if format == .csv { throw ValidationError("--format csv is for bench views and bench sweep; here: text or json") }
    }

    var json: Bool { format == .json }
}

/// The baseline option `bench views`, `bench sweep` and `demo` share.
struct BaselineArguments: ParsableArguments {
    @Option(
        name: .customLong("baseline-seconds"),
        parsing: .unconditional, help: """
            Seconds of each baseline run first, in the same invocation: raw libzmq PUB/SUB (nbus-baseline, \
            at the scenario's transport, rate and payload) and Foundation NotificationCenter in-process. 0: none.
            """)
    var baselineSeconds: Double = 2

    func validate() throws {
        try SecondsOption.check(baselineSeconds, "--baseline-seconds", in: 0...600)
    }
}

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
