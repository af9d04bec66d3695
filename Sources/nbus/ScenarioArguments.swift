import ArgumentParser
import BusBench
import Foundation

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

    @Flag(help: "Post and consume a message type (JSON, decoded by each view's consumer: onReceive(_:as:), task(subscribing:as:)) instead of bytes; the report says which.")
    var typed = false

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
        scenario.typed = typed ? true : nil
        scenario.drainSeconds = drainSeconds
        scenario.stallSeconds = stallSeconds
        try scenario.validate()
        return scenario
    }
}
