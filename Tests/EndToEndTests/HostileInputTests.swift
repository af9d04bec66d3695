#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// Hostile command-line input (issue 14, items 9-14), with real `nbus` processes: values that used
// to crash a command or make it misbehave are refused up front as usage errors (exit 64; an unusable endpoint exits 2) naming
// the argument, or stop a start with a clear error. Every wait is bounded and waits on something a
// process shows (an exit, a banner), never on a sleep.

/// `nbus arguments...` exits 64 on its own (not by a signal, not after a wait) with `message` on
/// stderr.
private func expectUsageError(
    _ children: Children, _ arguments: [String], _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let output = try await children.run(arguments.first ?? "nbus", arguments, timeout: .seconds(10), sourceLocation: sourceLocation)
    let text = output?.stderrText ?? ""
    #expect(
        output?.status == 64 && output?.bySignal == false,
        "\(arguments): \(output?.bySignal == true ? "signal" : "exit") \(output?.status ?? -1): \(text.prefix(400))",
        sourceLocation: sourceLocation)
    #expect(text.contains(message), "\(arguments): stderr: \(text.prefix(400))", sourceLocation: sourceLocation)
}

@Suite("nbus refuses hostile command-line input (real processes)", .serialized, .timeLimit(.minutes(1)))
struct HostileInputTests {
    // MARK: 9. Seconds and rates

    /// Seconds and rate values that convert to no integer or `Duration` (they used to trap, SIGILL),
    /// with the start of the message that must name the flag and the range.
    static let outOfRangeSeconds: [([String], String)] = [
        (["publish", "s.x", "--rate", "1e-300", "--count", "2", "--no-wait"], "--rate must be from 0.0001 to 1000000000 notifications per second"),
        (["publish", "s.x", "--rate", "inf", "--no-wait"], "--rate must be from 0.0001 to"),
        (["publish", "s.x", "--timeout", "1e300"], "--timeout must be from 0.001 to 31536000 seconds"),
        (["publish", "s.x", "--timeout", "nan"], "--timeout must be from 0.001 to 31536000 seconds"),
        (["publish", "s.x", "--close-timeout", "inf", "--no-wait"], "--close-timeout must be from 0 to 3600 seconds"),
        (["broker", "--max-memory", "1"], "--max-memory must be 64 MiB to 1 PiB or no limit (the process alone takes some 30 MiB), not 1 MiB"),
        (["broker", "--max-memory", "1073741825"], "--max-memory must be 64 MiB to 1 PiB or no limit"),
        (["broker", "--max-memory=-1"], "--max-memory must be 0 (no limit) or a size in MiB"),
        (["broker", "--subscriber-budget", "1048577"], "--subscriber-budget must be 0 (none: --hwm messages) to 1 TiB, not 1048577 MiB"),
        (["broker", "--subscriber-budget", "9223372036854775807"], "--subscriber-budget must be 0 (none: --hwm messages) to 1 TiB"),
        (["broker", "--slow-after", "3601"], "--slow-after must be zero to 3600 seconds"),
        (["subscribe", "s.x", "--max-memory", "99999999999999", "--timeout", "30"], "--max-memory must be 0 (no limit) or 64 to 1073741824 MiB"),
        (["subscribe", "s.x", "--max-payload", "99999999999", "--timeout", "30"], "--max-payload must be 0 to 1073741824 bytes"),
        (["publish", "s.x", "--hwm=-1", "--no-wait"], "--hwm must be 0 (no limit) or more"),
        // Sent before a keeping broker has subscribed, a retained post was kept nowhere.
        (["publish", "s.x", "v", "--retain", "--no-wait"], "--retain with --no-wait sends before a broker that keeps values has subscribed"),
        // A name or pattern is shown with its control characters escaped: an ESC would reach the terminal.
        (["publish", "a\u{1B}[31mb", "--no-wait"], "invalid name 'a\\u001b[31mb'"),
        (["subscribe", "a.\u{1B}", "--timeout", "30"], "invalid pattern 'a.\\u001b'"),
        (["publish", "s.x", "--stall-limit=-1", "--no-wait"], "--stall-limit must be 0 (no limit) or from 0.001 to 86400 seconds"),
        (["publish", "s.x", "--stall-limit", "nan", "--no-wait"], "--stall-limit must be 0 (no limit) or from 0.001 to 86400 seconds"),
        (["subscribe", "s.x", "--timeout", "inf"], "--timeout must be from 0.001 to 31536000 seconds"),
        (["subscribe", "s.x", "--timeout", "1e300"], "--timeout must be from 0.001 to 31536000 seconds"),
        (["broker", "--stats", "inf"], "--stats must be from 0.1 to 86400 seconds"),
        (["broker", "--stats", "1e300"], "--stats must be from 0.1 to 86400 seconds"),
        (["broker", "--heartbeat", "nan"], "--heartbeat must be a number of seconds, got nan"),
        (["broker", "--heartbeat=-1"], "--heartbeat must be zero (off) or 0.001 to 2184 seconds"),
        (["broker", "--heartbeat", "0.0005"], "--heartbeat must be zero (off) or 0.001 to 2184 seconds"),
        (["broker", "--heartbeat", "2185"], "--heartbeat must be zero (off) or 0.001 to 2184 seconds"),
        (["broker", "--idle-spin", "11"], "--idle-spin must be zero to 10 seconds, not 11.0 seconds"),
        (["bench", "overload", "--seconds", "1e300"], "--seconds must be from 0.001 to 86400 seconds"),
        (["bench", "overload", "--rss-limit-mb", "inf"], "--rss-limit-mb must be from 1 to 1000000 MB"),
        (["bench", "overload", "--close-timeout", "inf"], "--close-timeout must be from 0 to 3600 seconds"),
        (["bench", "throughput", "--latency-seconds", "inf"], "--latency-seconds must be from 0.001 to 3600 seconds"),
        (["bench", "views", "--seconds", "1e300"], "--seconds must be from 0.001 to 86400 seconds"),
        (["bench", "sweep", "--param", "rate", "--values", "10", "--baseline-seconds", "nan"], "--baseline-seconds must be from 0 to 600"),
        (["bench", "filter", "--seconds", "inf"], "--seconds must be from 0.001 to 86400 seconds"),
        (["bench", "views", "--rate", "1e300"], "rate value '1e300' is not a number or max"),
        (["demo", "--seconds", "inf"], "--seconds must be from 0.001 to 3600 seconds"),
        (["bench", "throughput", "--latency-spin", "2"], "--latency-spin must be from 0 to 1 seconds"),
        (["bench", "overload", "--handler-time", "nan"], "--handler-time must be from 0 to 1 seconds"),
        (["bench", "views", "--churn-interval", "inf"], "--churn-interval must be from 0 to 3600 seconds"),
        (["bench", "filter", "--body-time", "1e300"], "--body-time must be from 0 to 1 seconds"),
        (["bench", "peer-client", "--mode", "sub", "--spin=-1"], "--spin must be from 0 to 1 seconds"),
        (["bench", "peer-client", "--mode", "sub", "--work=2"], "--work must be from 0 to 1 seconds"),
        // A negative value reaches the range check (it used to read as a missing value).
        (["publish", "s.x", "--rate", "-5", "--no-wait"], "--rate must be from 0.0001 to 1000000000 notifications per second"),
        (["subscribe", "s.x", "--timeout", "-1"], "--timeout must be from 0.001 to 31536000 seconds"),
        (["request", "s.x", "--timeout", "-1"], "--timeout must be from 0.001 to 31536000 seconds"),
    ]

    @Test("seconds, rates, sizes and limits out of range (inf, nan, 1e300, 1e-300, negative, huge) are usage errors naming the flag", arguments: outOfRangeSeconds)
    func secondsOutOfRange(arguments: [String], message: String) async throws {
        let children = try Children()
        defer { children.killAll() }
        // Endpoints of this test's own: a command that got past its checks would not meet another's.
        var all = arguments
        switch arguments[0] {
        case "publish": all += ["--connect", children.folder.ipc("nobody.sock")]
        case "subscribe": all += ["--connect", children.folder.ipc("nobody.sock")]
        case "broker": all += ["--frontend", children.folder.ipc("f.sock"), "--backend", children.folder.ipc("b.sock")]
        default: break
        }
        try await expectUsageError(children, all, message)
    }

    /// The spellings in milliseconds and microseconds that scripts used before every time option
    /// took seconds: gone before the first release, so each is an unknown option now.
    static let removedLegacyFlags: [[String]] = [
        ["broker", "--heartbeat-ms", "100"],
        ["bench", "throughput", "--latency-spin-us", "200"],
        ["bench", "overload", "--handler-us", "100"],
        ["bench", "overload", "--close-timeout-ms", "100"],
        ["bench", "views", "--churn-ms", "250"],
        ["bench", "views", "--body-us", "5"],
        ["bench", "filter", "--body-us", "5"],
        ["bench", "peer-client", "--mode", "sub", "--spin-us", "5"],
    ]

    @Test("the legacy -ms and -us flags are unknown options, not hidden aliases", arguments: removedLegacyFlags)
    func legacyFlagsRemoved(arguments: [String]) async throws {
        let children = try Children()
        defer { children.killAll() }
        let flag = try #require(arguments.first { $0.hasSuffix("-ms") || $0.hasSuffix("-us") })
        var all = arguments
        if arguments[0] == "broker" {
            all += ["--frontend", children.folder.ipc("f.sock"), "--backend", children.folder.ipc("b.sock")]
        }
        try await expectUsageError(children, all, "Unknown option '\(flag)'")
    }

    // MARK: 10. broker --stats minimum

    @Test("broker --stats below 0.1 s is a usage error (1e-9 wrote 13,000 lines a second); 0.1 runs and reports")
    func brokerStatsMinimum() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (frontend, backend) = (children.folder.ipc("f.sock"), children.folder.ipc("b.sock"))
        for interval in ["1e-9", "0.05"] {
            try await expectUsageError(
                children, ["broker", "--stats", interval, "--frontend", frontend, "--backend", backend],
                "--stats must be from 0.1 to 86400 seconds, got \(Double(interval) ?? 0) (or 0: only at exit)")
        }
        let broker = try children.start("broker", ["broker", "--stats", "0.1", "--frontend", frontend, "--backend", backend])
        #expect(await broker.waitForStderr(containing: "nbus broker: stats:"), "\(broker.describe())")
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(stopped?.stderrText.contains("nbus broker: stopped:") == true, "\(broker.describe())")
    }

    // MARK: 11. inproc:// endpoints

    /// Every endpoint option of every command, given an inproc:// endpoint no other process could reach.
    static let inprocEndpoints: [([String], String)] = [
        (["publish", "i.x", "--connect", "inproc://bus", "--no-wait"], "--connect inproc://bus: inproc:// endpoints are reachable only inside one process"),
        (["publish", "i.x", "--bind", "inproc://bus", "--no-wait"], "--bind inproc://bus: inproc://"),
        (["subscribe", "i.x", "--connect", "inproc://bus", "--timeout", "30"], "--connect inproc://bus: inproc://"),
        (["subscribe", "i.x", "--bind", "inproc://bus", "--timeout", "30"], "--bind inproc://bus: inproc://"),
        (["broker", "--frontend", "inproc://front"], "--frontend inproc://front: inproc://"),
        (["broker", "--backend", "inproc://back"], "--backend inproc://back: inproc://"),
        (["broker", "--upstream", "inproc://up"], "--upstream inproc://up: inproc://"),
        // Endpoints libzmq would refuse with a bare "Invalid argument", or take wrongly (port -1
        // became 65535): named here instead.
        (["publish", "i.x", "--connect", "tcp://127.0.0.1", "--no-wait"], "--connect tcp://127.0.0.1: a tcp endpoint needs HOST:PORT"),
        (["publish", "i.x", "--connect", "tcp://", "--no-wait"], "--connect tcp://: a tcp endpoint needs HOST:PORT"),
        (["subscribe", "i.x", "--bind", "tcp://127.0.0.1:-1", "--timeout", "30"], "--bind tcp://127.0.0.1:-1: the port must be a number from 0 to 65535"),
        (["subscribe", "i.x", "--connect", "ipc://", "--timeout", "30"], "--connect ipc://: an ipc endpoint needs a path"),
    ]

    @Test("inproc:// endpoints (no other process can reach them) and malformed tcp and ipc ones are refused (exit 2)", arguments: inprocEndpoints)
    func inprocEndpointsAreRefused(arguments: [String], message: String) async throws {
        let children = try Children()
        defer { children.killAll() }
        var all = arguments
        // The broker's other endpoints in this test's folder, so a broker that started would not clash.
        if arguments[0] == "broker" {
            if !arguments.contains("--frontend") { all += ["--frontend", children.folder.ipc("f.sock")] }
            if !arguments.contains("--backend") { all += ["--backend", children.folder.ipc("b.sock")] }
        }
        // An unusable endpoint, like one that cannot be bound: exit 2 (issue 29), not 64.
        let output = try await children.run(all[0], all, timeout: .seconds(10))
        let text = output?.stderrText ?? ""
        #expect(output?.status == 2 && output?.bySignal == false, "\(all): exit \(output?.status ?? -1): \(text.prefix(400))")
        #expect(text.contains(message), "\(all): stderr: \(text.prefix(400))")
    }

    // MARK: 12. Arguments that are not UTF-8

    /// Arguments with bytes that are not UTF-8, as a shell passes them (`printf` octal escapes: a
    /// Swift `String` cannot hold them), with the message naming the argument.
    static let invalidUTF8Arguments: [(String, String)] = [
        (#"publish "$(printf '\377')" --no-wait"#, #"argument 2 ('\xFF') is not valid UTF-8"#),
        (#"publish "$(printf '\376')" --no-wait"#, #"argument 2 ('\xFE') is not valid UTF-8"#),
        (#"publish a.b "$(printf 'x\303')" --no-wait"#, #"argument 3 ('x\xC3') is not valid UTF-8"#),
        (#"publish a.b --no-wait --header "$(printf 'k=\355\240\200')""#, #"argument 5 ('k=\xED\xA0\x80') is not valid UTF-8"#),
        (#"subscribe "$(printf 'a.\300\257')" --timeout 30"#, #"argument 2 ('a.\xC0\xAF') is not valid UTF-8"#),
        (#"broker --frontend "$(printf 'ipc:///tmp/\377')""#, #"argument 3 ('ipc:///tmp/\xFF') is not valid UTF-8"#),
    ]

    @Test("an argument that is not valid UTF-8 is a usage error naming it, not replaced by U+FFFD and sent", arguments: invalidUTF8Arguments)
    func invalidUTF8ArgumentIsRefused(command: String, message: String) async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("nobody.sock")
        let connect = command.hasPrefix("broker") ? "" : " --connect \(endpoint)"
        let child = try children.start(
            "nbus", command: URL(fileURLWithPath: "/bin/sh"), ["-c", #"exec "$0" "# + command + connect, children.executable.path])
        let output = await child.waitForExit(timeout: .seconds(10))
        let text = output?.stderrText ?? ""
        #expect(output?.status == 64 && output?.bySignal == false, "\(child.describe())")
        #expect(text.contains(message), "stderr: \(text.prefix(400))")
        #expect(text.contains("nbus takes names, patterns, payloads and options as UTF-8 text"), "stderr: \(text.prefix(400))")
    }

    // MARK: 13. Key files that are not regular files

    /// Runs `nbus keygen --output name` for each name in the test's folder.
    private func keygen(_ children: Children, _ names: [String]) async throws {
        for name in names {
            let output = try #require(try await children.run("keygen \(name)", ["keygen", "--output", name]))
            #expect(!output.bySignal && output.status == 0, "keygen \(name): \(output.stderrText)")
        }
    }

    /// `mkfifo` in the test's folder.
    private func makeFIFO(_ children: Children, _ name: String) throws {
        let path = "\(children.folder.path)/\(name)"
        try #require(mkfifo(path, 0o600) == 0, "mkfifo \(path): errno \(errno)")
    }

    @Test("a FIFO as a key file is refused at once, naming it (open used to block forever, past SIGTERM)")
    func fifoKeyFileIsRefused() async throws {
        let children = try Children()
        defer { children.killAll() }
        try await keygen(children, ["broker", "client"])
        try makeFIFO(children, "fifo.key")
        try makeFIFO(children, "fifo.pub")
        try FileManager.default.createDirectory(atPath: "\(children.folder.path)/pubs", withIntermediateDirectories: true)
        let endpoint = children.folder.ipc("nobody.sock")
        let runs: [([String], String)] = [
            (["publish", "k.x", "--connect", endpoint, "--curve-secret", "fifo.key", "--curve-server-key", "broker.pub", "--timeout", "30"],
             "fifo.key: not a CURVE key file (not a regular file: a FIFO)"),
            (["subscribe", "k.x", "--connect", endpoint, "--curve-secret", "client.key", "--curve-server-key", "fifo.pub", "--timeout", "30"],
             "fifo.pub: not a CURVE key file (not a regular file: a FIFO)"),
            (["broker", "--curve-secret", "fifo.key", "--allow-publishers", "pubs", "--allow-subscribers", "pubs",
              "--frontend", children.folder.ipc("f.sock"), "--backend", children.folder.ipc("b.sock")],
             "fifo.key: not a CURVE key file (not a regular file: a FIFO)"),
        ]
        for (arguments, message) in runs {
            let output = try await children.run(arguments[0], arguments, timeout: .seconds(10))
            let text = output?.stderrText ?? ""
            #expect(output?.status == 2 && output?.bySignal == false, "\(arguments[0]): exit \(output?.status ?? -1): \(text)")
            #expect(text.contains(message), "\(arguments[0]): \(text)")
        }
    }

    @Test("broker --curve-secret NAME.pub says it is a public key, not to chmod it")
    func brokerPublicKeyAsSecret() async throws {
        let children = try Children()
        defer { children.killAll() }
        try await keygen(children, ["broker"])
        try FileManager.default.createDirectory(atPath: "\(children.folder.path)/pubs", withIntermediateDirectories: true)
        let output = try await children.run(
            "broker",
            ["broker", "--curve-secret", "broker.pub", "--allow-publishers", "pubs", "--allow-subscribers", "pubs",
             "--frontend", children.folder.ipc("f.sock"), "--backend", children.folder.ipc("b.sock")],
            timeout: .seconds(10))
        let text = output?.stderrText ?? ""
        #expect(output?.status == 2 && output?.bySignal == false, "exit \(output?.status ?? -1): \(text)")
        #expect(
            text.contains("broker.pub is a public key file; --curve-secret needs the secret key file (probably broker.key"),
            "\(text)")
        #expect(!text.contains("chmod"), "\(text)")
    }

    @Test("an allow-list *.pub entry that is a folder or a FIFO stops the start, naming it (it was skipped silently)")
    func unreadableAllowListEntryStopsTheStart() async throws {
        let children = try Children()
        defer { children.killAll() }
        try await keygen(children, ["broker", "pubs/orders", "subs/audit"])
        try FileManager.default.createDirectory(atPath: "\(children.folder.path)/pubs/folder.pub", withIntermediateDirectories: true)
        try makeFIFO(children, "subs/fifo.pub")
        let broker = ["broker", "--curve-secret", "broker.key", "--frontend", children.folder.ipc("f.sock"),
                      "--backend", children.folder.ipc("b.sock")]
        for (lists, message) in [
            (["--allow-publishers", "pubs", "--allow-subscribers", "pubs"], "pubs/folder.pub: not a CURVE key file (not a regular file: a folder)"),
            (["--allow-publishers", "subs", "--allow-subscribers", "subs"], "subs/fifo.pub: not a CURVE key file (not a regular file: a FIFO)"),
        ] {
            let output = try await children.run("broker", broker + lists, timeout: .seconds(10))
            let text = output?.stderrText ?? ""
            #expect(output?.status == 2 && output?.bySignal == false, "\(lists): exit \(output?.status ?? -1): \(text)")
            #expect(text.contains(message), "\(lists): \(text)")
        }
        // A publisher binding with such an allow list stops too (the same loader).
        let output = try await children.run(
            "publisher",
            ["publish", "k.x", "--bind", children.folder.ipc("p.sock"), "--curve-secret", "pubs/orders.key",
             "--allow-subscribers", "subs", "--timeout", "30"],
            timeout: .seconds(10))
        #expect(output?.status == 2, "exit \(output?.status ?? -1): \(output?.stderrText ?? "")")
        #expect(output?.stderrText.contains("subs/fifo.pub: not a CURVE key file") == true, "\(output?.stderrText ?? "")")
    }
}
