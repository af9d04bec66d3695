import ArgumentParser
import BusBench
import Foundation

/// `nbus bench overload`: a fast publisher against a slow subscriber for a minute; the subscriber's
/// memory stays bounded and every loss is counted.
struct BenchOverload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "overload",
        abstract: "Overload: bounded subscriber memory, every loss counted (fast publisher, slow for-await consumer).",
        discussion: """
            Two processes of this binary over ipc. The publisher (default BusConfiguration: HWMs 10000, \
            no publisher back-pressure, so its XPUB drops at the HWM) waits for the subscription \
            (waitForSubscribers), posts --size byte notifications as fast as it can for --seconds, then \
            closes (its close sends the end-of-stream record that lets the subscriber count a lost tail). \
            The subscriber consumes events(named:buffering:) in one for-await loop that busy-waits \
            --handler-time per notification, sees gaps in-band, and samples its VmRSS every 250 ms; the \
            runner reads both children's /proc/<pid>/status too. Checks, exactly: published \
            (BusStats.posted) == delivered + lostUpstream + droppedLocalBuffer + discardedAtEnd + \
            buffered. Exits 2 when that or any other accounting check fails or the subscriber's peak \
            RSS reaches --rss-limit-mb; 1 when a child fails. Progress goes to stderr.
            """
    )

    @Option(parsing: .unconditional, help: "Seconds of posting.")
    var seconds: Double = 60

    @Option(parsing: .unconditional, help: "Payload bytes per notification.")
    var size: Int = 4_096

    @Option(name: .customLong("handler-time"), parsing: .unconditional, help: ArgumentHelp(
        "The subscriber's busy work per notification, seconds (default: 0.0001, 100 us).", valueName: "seconds"))
    var handlerTime: Double?

    var handlerMicroseconds: Int {
        get throws {
            try SecondsOption.span(
                handlerTime, "--handler-time", perSecond: 1e6,
                default: 0.0001, in: 0...1)
        }
    }

    @Option(help: "The subscriber's buffering policy: drop-oldest, drop-newest or suspend (suspendProducer).")
    var policy: OverloadPolicy = .dropOldest

    @Option(parsing: .unconditional, help: "The subscriber's buffer capacity (notifications).")
    var buffer: Int = 8_192

    @Option(parsing: .unconditional, help: "ZeroMQ send/receive high-water mark, both processes (BusConfiguration's default).")
    var hwm: Int32 = OverloadOptions().highWaterMark

    @Option(
        name: .customLong("close-timeout"),
        parsing: .unconditional, help: ArgumentHelp("The publisher's close timeout, seconds (BusConfiguration's default: 2).", valueName: "seconds"))
    var closeTimeout: Double = Double(OverloadOptions().closeTimeoutMilliseconds) / 1_000

    @Option(name: .customLong("rss-limit-mb"), parsing: .unconditional, help: "Fail when the subscriber's peak RSS reaches this many MB (10^6 bytes).")
    var rssLimitMegabytes: Double = 200

    @Option(parsing: .unconditional, help: "Seconds each child may take beyond --seconds before it is killed (the command then fails).")
    var timeout: Int = 120

    @OptionGroup var output: BenchJSONOption

    /// Whether to print one JSON object instead of the table.
    var json: Bool { output.json }

    func validate() throws {
        try SecondsOption.check(seconds, "--seconds", in: 0.001...86_400)
        try SecondsOption.check(rssLimitMegabytes, "--rss-limit-mb", in: 1...1_000_000, unit: "MB")
        try SecondsOption.check(closeTimeout, "--close-timeout", in: 0...3_600)
        _ = try handlerMicroseconds
        try checkBenchOptions { try options.validate() }
    }

    var options: OverloadOptions {
        var options = OverloadOptions()
        options.seconds = seconds
        options.size = size
        // Checked in validate(): a value that got here converts.
        options.handlerMicroseconds = (try? handlerMicroseconds) ?? 0
        options.policy = policy
        options.buffer = buffer
        options.highWaterMark = hwm
        options.closeTimeoutMilliseconds = SecondsOption.milliseconds(closeTimeout)
        options.rssLimitBytes = UInt64(max(0, rssLimitMegabytes) * 1e6)
        options.timeoutSeconds = timeout
        return options
    }

    func run() async throws {
        let report = try await OverloadBenchmark.run(options) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        print(json ? try report.json() : report.table())
        try exitIfChecksFailed(report.failures, heading: "OVERLOAD CHECKS FAILED")
    }
}
