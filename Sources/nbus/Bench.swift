import ArgumentParser
import BusBench
import Foundation

/// `nbus bench`: benchmarks that start real processes.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks with real processes and sockets, against a raw-libzmq baseline.",
        subcommands: [BenchThroughput.self, BenchWorker.self]
    )
}

extension ThroughputOptions.Transport: ExpressibleByArgument {}
extension BusWorkerOptions.Role: ExpressibleByArgument {}

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

    @Option(help: "Notifications per throughput run.")
    var count: Int = 1_000_000

    @Option(help: "Payload bytes per notification.")
    var size: Int = 256

    @Option(help: "ZeroMQ send/receive high-water mark, both sides, baseline and bus.")
    var hwm: Int32 = 10_000

    @Option(help: "Transport between the processes: ipc or tcp.")
    var transport: ThroughputOptions.Transport = .ipc

    @Option(help: "Throughput runs per side (raw and bus alternate); the median is reported.")
    var runs: Int = 3

    @Option(help: "Seconds before a child process is killed (the command then fails).")
    var timeout: Int = 120

    @Option(name: .customLong("latency-rate"), help: "Notifications per second in the paced latency run.")
    var latencyRate: Int = 10_000

    @Option(name: .customLong("latency-seconds"), help: "Duration of the paced latency run, seconds.")
    var latencySeconds: Double = 2

    @Option(name: .customLong("round-trips"), help: "Measured raw REQ/REP round trips.")
    var roundTrips: Int = 20_000

    @Flag(name: .customLong("no-in-process"), help: "Skip the in-process rows (Foundation vs embedded bus).")
    var noInProcess = false

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func run() async throws {
        var options = ThroughputOptions(workerCommand: ["bench", "worker"])
        options.count = count
        options.size = size
        options.highWaterMark = hwm
        options.transport = transport
        options.runs = runs
        options.timeoutSeconds = timeout
        options.latencyRate = latencyRate
        options.latencySeconds = latencySeconds
        options.roundTrips = roundTrips
        options.skipInProcess = noInProcess
        // Children exit by themselves when this process goes (their stdin pipe closes), so
        // SIGINT/SIGTERM keep their default action here.
        let report = try await ThroughputBenchmark.run(options) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        print(json ? try report.json() : report.table())
        if !report.accountingErrors.isEmpty {
            FileHandle.standardError.write(
                Data(("ACCOUNTING MISMATCH:\n" + report.accountingErrors.map { "  " + $0 }.joined(separator: "\n") + "\n").utf8))
            throw ExitCode(2)
        }
    }
}

/// The hidden worker `bench throughput` starts twice: a bus publisher and a bus subscriber.
struct BenchWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "One side of the two-process bus benchmark (started by `nbus bench throughput`).",
        shouldDisplay: false
    )

    @Argument(help: "publisher or subscriber.")
    var role: BusWorkerOptions.Role

    @Option(help: "Endpoint the publisher binds / the subscriber connects to.")
    var endpoint: String

    @Option(help: "Notifications to post / consume.")
    var count: Int

    @Option(help: "Payload bytes.")
    var size: Int = 256

    @Option(help: "ZeroMQ high-water marks.")
    var hwm: Int32 = 10_000

    @Option(help: "Publisher pacing, notifications per second (default: as fast as possible).")
    var rate: Int?

    @Option(help: "Notification name.")
    var name: String = ThroughputOptions.notificationName

    @Option(help: "Seconds before giving up.")
    var timeout: Int = 120

    @Option(name: .customLong("idle-timeout"), help: "Subscriber: seconds without a notification before giving up.")
    var idleTimeout: Int = 15

    @Flag(name: .customLong("exit-on-stdin-eof"), help: "Exit when stdin reaches end of file (the parent is gone).")
    var exitOnStdinEOF = false

    func run() async throws {
        var options = BusWorkerOptions(role: role, endpoint: endpoint, count: count)
        options.size = size
        options.highWaterMark = hwm
        options.rate = rate
        options.name = name
        options.timeoutSeconds = timeout
        options.idleTimeoutSeconds = idleTimeout
        options.exitOnStandardInputEOF = exitOnStdinEOF
        let status = await BusWorker.run(options)
        if status != 0 { throw ExitCode(status) }
    }
}
