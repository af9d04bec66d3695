import ArgumentParser
import BusBench

extension PeerClientOptions.Mode: ExpressibleByArgument {}
extension PeerClientOptions.Loop: ExpressibleByArgument {}

/// `nbus bench peer-client`: the peers kit's client (`Benchmarks/peers/README.md`) on the bus.
struct BenchPeerClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peer-client",
        abstract: "The peers kit's benchmark client on the bus, through nbus broker (run.py starts it).",
        discussion: """
            The same workload NATS, Redis and bare ZeroMQ run in Benchmarks/peers (see its README.md), with the bus's \
            defaults: sub counts one name until END or 3 s after its last notification (60 s when none comes); pub waits for a subscriber, \
            posts --n notifications cycling --subject, then END, then closes; ping/pong measure \
            round trips on `ping` and `pong`. Flags are --name=value; the last line of stdout is one \
            JSON object (sub and pub add the bus's loss counters). Exit status: 0 done, 1 failed, \
            2 an unusable endpoint, 64 bad arguments.
            """,
        shouldDisplay: false)

    @Option(help: "sub, pub, ping or pong.")
    var mode: PeerClientOptions.Mode

    @Option(help: "sub: the name to subscribe; pub: a comma list of names, cycled.")
    var subject = "bench.a"

    @Option(name: .customLong("end-subject"), help: "pub: the name of the END message (default: the first subject).")
    var endSubject: String?

    @Option(name: .customLong("n"), parsing: .unconditional, help: "pub: notifications; ping: measured round trips.")
    var count = 1_000_000

    @Option(parsing: .unconditional, help: "Payload bytes.")
    var size = 256

    @Option(parsing: .unconditional, help: "ping: unmeasured round trips first.")
    var warmup = 1_000

    @Option(help: ArgumentHelp("sub, pong: create this file once subscribed.", valueName: "path"))
    var ready: String?

    @Option(help: ArgumentHelp("ping: write the round trips here, ns, one per line.", valueName: "path"))
    var dump: String?

    @Option(help: "The broker's frontend (publishers).")
    var frontend = "tcp://127.0.0.1:15550"

    @Option(help: "The broker's backend (subscribers).")
    var backend = "tcp://127.0.0.1:15551"

    @Option(name: .customLong("spin"), parsing: .unconditional, help: ArgumentHelp(
        "BusConfiguration.idleSpin of the client's bus, seconds: 0, the default, is the bus's default; 0.0002 is the documented low-latency setting.",
        valueName: "seconds"))
    var spin: Double?

    @Option(name: .customLong("work"), parsing: .unconditional, help: ArgumentHelp(
        "sub: busy work per notification, seconds (a handler's time; 0.000005 is 5 us), in a task of its own as a user's for-await loop would be: a subscriber persistently slower than its publisher. Default 0.",
        valueName: "seconds"))
    var work: Double?

    @Option(help: ArgumentHelp(
        "sub, ping, pong: where the for-await loops run: executor (the bus's own thread, the README's way for a short body) or plain (a task on the global pool).",
        valueName: "executor|plain"))
    var loop: PeerClientOptions.Loop = .executor

    @Option(name: .customLong("batch-bytes"), parsing: .unconditional, help: ArgumentHelp(
        "The largest batch frame the client's bus builds, bytes (0: batching off); default: the bus's default.",
        valueName: "bytes"))
    var batchBytes: Int?

    var options: PeerClientOptions {
        var options = PeerClientOptions(mode: mode)
        options.subject = subject
        options.endSubject = endSubject
        options.count = count
        options.size = size
        options.warmup = warmup
        options.readyFile = ready
        options.dumpFile = dump
        options.frontend = frontend
        options.backend = backend
        options.loop = loop
        options.batchBytes = batchBytes
        // Checked in validate(): a value that got here converts.
        options.idleSpinMicroseconds =
            (try? SecondsOption.span(spin, "--spin", perSecond: 1e6, default: 0, in: 0...1)) ?? 0
        options.workNanoseconds = (try? SecondsOption.span(work, "--work", perSecond: 1e9, default: 0, in: 0...1)) ?? 0
        return options
    }

    func validate() throws {
        // Comma-separated lists name several brokers (NBP-1 §17).
        for endpoint in frontend.split(separator: ",") { try validateEndpoint(String(endpoint), option: "--frontend", connecting: true) }
        for endpoint in backend.split(separator: ",") { try validateEndpoint(String(endpoint), option: "--backend", connecting: true) }
        _ = try SecondsOption.span(spin, "--spin", perSecond: 1e6, default: 0, in: 0...1)
        _ = try SecondsOption.span(work, "--work", perSecond: 1e9, default: 0, in: 0...1)
        if work != nil && mode != .sub { throw ValidationError("--work is the subscriber's per-notification time: only with --mode sub") }
        do { try options.validate() } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        do {
            print(try await PeerClient.run(options))
        } catch {
            throw fail("bench peer-client", error, code: 1)
        }
    }
}
