import ArgumentParser
import BusBench
import Foundation

/// `nbus bench`: benchmarks that start real processes.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks with real processes and sockets, against a raw-libzmq baseline.",
        subcommands: [
            BenchThroughput.self, BenchOverload.self, BenchViews.self, BenchSweep.self, BenchFilter.self, BenchWorker.self,
            BenchPeerClient.self,
        ]
    )
}

extension ThroughputOptions.Transport: ExpressibleByArgument {}
extension ThroughputOptions.Topology: ExpressibleByArgument {}
extension BusWorkerOptions.Role: ExpressibleByArgument {}
extension OverloadWorkerOptions.Role: ExpressibleByArgument {}
extension OverloadPolicy: ExpressibleByArgument {}

/// `nbus bench throughput`: bus vs raw libzmq across two processes, latency, and in-process rows.
struct BenchThroughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "throughput",
        abstract: "Notifications/s across two processes, bus vs raw libzmq, plus latency and in-process rows.",
        discussion: """
            In one invocation: a raw-libzmq baseline (nbus-baseline, C: XPUB with NODROP -> SUB, the \
            same bytes in one frame), the bus (a publisher and a subscriber process of this binary, \
            one `for await` consumer), alternating --runs times; a REQ/REP round trip and a paced bus \
            latency run; Foundation NotificationCenter vs the embedded bus in this process. \
            Exits non-zero when a child fails or any message is lost. Progress goes to stderr.
            """
    )

    @Option(parsing: .unconditional, help: "Notifications per throughput run.")
    var count: Int = 1_000_000

    @Option(parsing: .unconditional, help: "Payload bytes per notification.")
    var size: Int = 256

    @Option(parsing: .unconditional, help: "ZeroMQ send/receive high-water mark, both sides, baseline and bus.")
    var hwm: Int32 = 10_000

    @Option(help: "Transport between the processes: ipc or tcp.")
    var transport: ThroughputOptions.Transport = .ipc

    @Option(help: ArgumentHelp(
        "direct (the publisher binds) or brokered (both through a broker child: nbus broker with its defaults, and a bare zmq_proxy for raw libzmq; throughput runs only).",
        valueName: "topology"))
    var topology: ThroughputOptions.Topology = .direct

    @Option(parsing: .unconditional, help: "Throughput runs per side (raw and bus alternate); the median is reported.")
    var runs: Int = ThroughputOptions(workerCommand: []).runs

    @Option(parsing: .unconditional, help: "Seconds before a child process is killed (the command then fails).")
    var timeout: Int = 120

    @Option(name: .customLong("latency-rate"), parsing: .unconditional, help: "Notifications per second in the paced latency run.")
    var latencyRate: Int = 10_000

    @Option(name: .customLong("latency-seconds"), parsing: .unconditional, help: "Duration of the paced latency run, seconds.")
    var latencySeconds: Double = 2

    @Option(name: .customLong("latency-spin"), parsing: .unconditional, help: ArgumentHelp(
        "Idle spin (BusConfiguration.idleSpin) of the low-latency paced run, seconds (default: 0.0002); 0 skips it.",
        valueName: "seconds"))
    var latencySpin: Double?

    var latencySpinMicroseconds: Int {
        get throws {
            try SecondsOption.span(
                latencySpin, "--latency-spin", perSecond: 1e6,
                default: Double(ThroughputOptions(workerCommand: []).latencySpinMicroseconds) / 1e6, in: 0...1)
        }
    }

    @Option(name: .customLong("round-trips"), parsing: .unconditional, help: "Measured raw REQ/REP round trips.")
    var roundTrips: Int = 20_000

    @Flag(name: .customLong("no-in-process"), help: "Skip the in-process rows (Foundation vs embedded bus).")
    var noInProcess = false

    @Flag(name: .customLong("no-batch"), help: "The bus publisher sends one frame per notification (BusConfiguration.batching off).")
    var noBatch = false

    @Option(name: .customLong("batch-bytes"), parsing: .unconditional, help: ArgumentHelp(
        "The bus publisher's largest batch frame in bytes (BusConfiguration.batching; default: \(ThroughputOptions(workerCommand: []).batchBytes)).",
        valueName: "bytes"))
    var batchBytes: Int = ThroughputOptions(workerCommand: []).batchBytes

    @OptionGroup var output: BenchJSONOption

    /// Whether to print one JSON object instead of the table.
    var json: Bool { output.json }

    func validate() throws {
        try SecondsOption.check(latencySeconds, "--latency-seconds", in: 0.001...3_600)
        // The paced run posts rate x seconds notifications: bounded, so that product is an Int.
        guard (1...10_000_000).contains(latencyRate) else { throw ValidationError("--latency-rate must be from 1 to 10000000") }
        _ = try latencySpinMicroseconds
        guard (0...(64 << 20)).contains(batchBytes) else { throw ValidationError("--batch-bytes must be from 0 to 67108864") }
        try checkBenchOptions { try options.validate() }
    }

    var options: ThroughputOptions {
        var options = ThroughputOptions()
        options.count = count
        options.size = size
        options.highWaterMark = hwm
        options.transport = transport
        options.topology = topology
        options.batchBytes = noBatch ? 0 : batchBytes
        options.runs = runs
        options.timeoutSeconds = timeout
        options.latencyRate = latencyRate
        options.latencySeconds = latencySeconds
        // Checked in validate(): a value that got here converts.
        options.latencySpinMicroseconds = (try? latencySpinMicroseconds) ?? 0
        options.roundTrips = roundTrips
        options.skipInProcess = noInProcess
        return options
    }

    func run() async throws {
        // Children exit by themselves when this process goes (their stdin pipe closes), so
        // SIGINT/SIGTERM keep their default action here.
        let report = try await ThroughputBenchmark.run(options) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        print(json ? try report.json() : report.table())
        try exitIfChecksFailed(report.accountingErrors, heading: "ACCOUNTING MISMATCH")
    }
}

/// The hidden command every benchmark starts its worker processes with; the arguments are
/// built and read back in BusBench (`BenchWorkerCommand`), so this only hands them over.
struct BenchWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "A worker process of `nbus bench` (started by the benchmarks, with their options as JSON).",
        discussion: """
            The benchmarks start their workers with this command; it can be run by hand to measure \
            one side alone. OPTIONS is a JSON object: keys left out keep their defaults; a required \
            key missing or an unknown key is named in the error (exit 64). A paced publisher and \
            its subscriber, for example:

              nbus bench worker throughput \\
                '{"role":"publisher","endpoint":"ipc:///tmp/w","count":2000,"rate":1000}'
              nbus bench worker throughput \\
                '{"role":"subscriber","endpoint":"ipc:///tmp/w","count":2000}'

            Results are JSON lines on stdout. Exit status 3: stdin closed (with \
            "exitOnStandardInputEOF":true, as the benchmarks start them); 4: the hard deadline.
            """,
        shouldDisplay: false
    )

    @Argument(help: "The benchmark the worker belongs to: throughput, overload, views or requests.")
    var kind: BenchWorkerCommand.Kind

    @Argument(help: "The worker's options, as JSON (written by the benchmark that starts it).")
    var options: String

    func run() async throws {
        let status = await BenchWorkerCommand.run(kind: kind, options: options)
        if status != 0 { throw ExitCode(status) }
    }
}

extension BenchWorkerCommand.Kind: ExpressibleByArgument {}

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

/// A benchmark's own option check (`BenchError.invalidOptions`), run from a command's `validate()`,
/// so a bad value is a usage error like ArgumentParser's own: exit 64 and this command's usage.
func checkBenchOptions(_ check: () throws -> Void) throws {
    do {
        try check()
    } catch let error as BenchError {
        throw ValidationError(error.description)
    }
}
