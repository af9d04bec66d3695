import ArgumentParser
import BusBench
import Foundation

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

    @Flag(help: ArgumentHelp(
        "Only the typed-message rows in this process: the embedded bus's typed path against its byte path with the same JSON (alternating pairs, --runs), and against Foundation's typed messages, the faster of its async observer and messages(of:for:) (the same type, the same count: --count, at most 200,000).",
        discussion: ""))
    var typed = false

    @Flag(help: ArgumentHelp(
        "With --typed --topology brokered: a third run per round, the typed side with the message's Codable coding (BusJSON.encode/decode) beside its field coding (BusJSON.writeObject/readObject)."))
    var codable = false

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
        options.typedCodable = codable
        return options
    }

    func run() async throws {
        if typed {
            let report = try await TypedInProcessBenchmark.run(options) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
            print(json ? try report.json() : report.table())
            try exitIfChecksFailed(report.accountingErrors, heading: "ACCOUNTING MISMATCH")
            return
        }
        // Children exit by themselves when this process goes (their stdin pipe closes), so
        // SIGINT/SIGTERM keep their default action here.
        let report = try await ThroughputBenchmark.run(options) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        print(json ? try report.json() : report.table())
        try exitIfChecksFailed(report.accountingErrors, heading: "ACCOUNTING MISMATCH")
    }
}
