#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The command line as a newcomer meets it: what a mistake says, what `--help` shows first, and
/// the shapes scripts read (JSON notifications, summaries) as docs/command-line.md documents them.
@Suite("nbus command line", .timeLimit(.minutes(2)))
struct CommandLineTests {
    @Test("publish 'orders.*' says a name cannot hold wildcards (patterns are for subscribing), exit 64")
    func publishWildcardName() async throws {
        let children = try Children()
        defer { children.killAll() }
        for name in ["orders.*", "orders.>", "ord*ers"] {
            let output = try #require(try await children.run("publish", ["publish", name, "hi"]))
            #expect(output.status == 64, "\(output.stderrText)")
            #expect(output.stderrText.contains("a notification name cannot hold wildcards"), "\(output.stderrText)")
            #expect(output.stderrText.contains("patterns, to subscribe with"), "\(output.stderrText)")
            #expect(!output.stderrText.contains("whole tokens"), "\(output.stderrText)")
        }
    }

    @Test("publish _nbus.x and subscribe '_nbus.>' are usage errors naming the reserved first token, exit 64")
    func reservedNamesAreUsageErrors() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("reserved.sock")
        for arguments in [
            ["publish", "_nbus.x", "hi"], ["publish", "_nbus", "hi", "--no-wait"],
            ["subscribe", "_nbus.>", "--connect", endpoint], ["subscribe", "a.b", "_nbus.eos.*", "--connect", endpoint],
            ["subscribe", "_nbus", "--connect", endpoint],
        ] {
            let output = try #require(try await children.run(arguments[0], arguments, timeout: .seconds(20)))
            #expect(output.status == 64 && !output.bySignal, "\(arguments): \(output.status): \(output.stderrText)")
            #expect(output.stderrText.contains("first token is _nbus"), "\(arguments): \(output.stderrText)")
        }
        // Not reserved: _nbus as a later token, or a first token that only begins with it.
        let fine = try #require(
            try await children.run("subscribe", ["subscribe", "_nbusx.>", "a._nbus", "--connect", endpoint, "--timeout", "0.2", "--connect-timeout", "0"]))
        #expect(fine.status == 0, "\(fine.stderrText)")
    }

    /// The repository's docs/command-line.md.
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/command-line.md")

    /// The field names of the table after `<!-- fields: NAME -->` in docs/command-line.md: every
    /// backquoted name in the first column (a row may list several).
    static func documentedFields(_ name: String) throws -> Set<String> {
        let text = try String(contentsOf: document, encoding: .utf8)
        let marker = try #require(text.range(of: "<!-- fields: \(name) -->"), "no table '\(name)' in docs/command-line.md")
        var fields = Set<String>()
        var inTable = false
        for line in text[marker.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
            guard line.hasPrefix("|") else {
                if inTable { break } else { continue }
            }
            inTable = true
            let first = line.split(separator: "|", omittingEmptySubsequences: true).first ?? ""
            for match in first.matches(of: /`([A-Za-z0-9]+)`/) { fields.insert(String(match.output.1)) }
        }
        try #require(!fields.isEmpty, "table '\(name)' lists no field")
        return fields
    }

    /// The keys of `object`.
    static func keys(_ object: [String: Any]?) -> Set<String> { Set(object?.keys.map { $0 } ?? []) }

    @Test("JSON lines: time is the RFC 3339 form of timestamp, contentType a name; every field documented")
    func notificationLines() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("n.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "n.>", "--connect", endpoint, "--count", "2", "--timeout", "30", "--format", "json"])
        let named = try children.start(
            "publisher json", ["publish", "n.a", "x", "--content-type", "json", "--bind", endpoint, "--timeout", "30"])
        expectExit(await named.waitForExit(), 0, named)
        let coded = try children.start(
            "publisher 200", ["publish", "n.b", "y", "--content-type", "200", "--bind", endpoint, "--timeout", "30"])
        expectExit(await coded.waitForExit(), 0, coded)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
        let lines = subscriber.output.stdoutLines
        try #require(lines.count == 2, "\(subscriber.describe())")
        let documented = try Self.documentedFields("notification")
        var types: [String] = []
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            #expect(Self.keys(object).isSubset(of: documented), "undocumented: \(Self.keys(object).subtracting(documented))")
            // `retained` only on kept values handed to a `--retained` subscription (NBP-1 §18).
            #expect(
                documented.subtracting(Self.keys(object)) == ["payloadBase64", "retained"],
                "missing: \(documented.subtracting(Self.keys(object)))")
            types.append(object["contentType"] as? String ?? "?")
            // The integer read from the text (a Double would lose its last digits), and its time.
            let digits = try #require(line.firstMatch(of: /"timestamp":(\d+)/)?.output.1, "\(line)")
            let timestamp = try #require(UInt64(digits))
            var seconds = time_t(timestamp / 1_000_000_000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%09lluZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                parts.tm_hour, parts.tm_min, parts.tm_sec, timestamp % 1_000_000_000)
            #expect(object["time"] as? String == expected, "\(line)")
        }
        #expect(types.sorted() == ["200", "json"], "\(lines)")
    }

    @Test("summaries: one JSON object, the last line of stderr, with exactly the documented fields; text without a timestamp")
    func summaries() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker(["--format", "json"])
        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "s.>", "--connect", backend, "--count", "3", "--timeout", "30", "--format", "json", "--stats"])
        let publisher = try children.start(
            "publisher", ["publish", "s.x", "p{n}", "--count", "3", "--connect", frontend, "--timeout", "30", "--format", "json"])
        let published = await publisher.waitForExit()
        expectExit(published, 0, publisher)
        let subscribed = await subscriber.waitForExit()
        expectExit(subscribed, 0, subscriber)
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)

        for (output, command, tables) in [
            (published, "publish", ["publish"]), (subscribed, "subscribe", ["subscribe", "subscribe-stats"]),
            (stopped, "broker", ["broker"]),
        ] {
            let last = output?.stderrText.split(separator: "\n").last.map(String.init) ?? ""
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], "not a JSON last line: \(last)")
            #expect(object["summary"] as? String == command, "\(last)")
            let documented = try tables.reduce(into: Set<String>()) { $0.formUnion(try Self.documentedFields($1)) }
            #expect(Self.keys(object) == documented, "\(command): undocumented \(Self.keys(object).subtracting(documented)), missing \(documented.subtracting(Self.keys(object)))")
            // No number given twice as text: every count is a JSON number.
            for key in Self.keys(object) where !["summary", "patterns", "bus", "rejected", "publisherAuthentication", "subscriberAuthentication", "curve"].contains(key) {
                #expect(object[key] is NSNumber, "\(command).\(key) is not a number: \(last)")
            }
        }
        #expect(summaryCounts(published?.stderrText, "publish", "posted", "sent", "unsent") == [3, 3, 0])
        #expect(summaryCounts(subscribed?.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally") == [3, 0, 0])
        let patterns = summaryObject(subscribed?.stderrText, "subscribe")?["patterns"] as? [[String: Any]]
        #expect(patterns?.first?["pattern"] as? String == "s.>" && (patterns?.first?["delivered"] as? NSNumber)?.intValue == 3)
        #expect((summaryCounts(stopped?.stderrText, "broker", "notificationsFromPublishers")?.first ?? 0) >= 3)

        // A publish that found no subscriber: the error, then the summary, still last (posted 0).
        let lonely = try #require(
            try await children.run(
                "lonely", ["publish", "s.y", "--connect", children.folder.ipc("none.sock"), "--timeout", "0.2", "--format", "json"]))
        #expect(lonely.status == 2, "\(lonely.stderrText)")
        #expect(lonely.stderrText.split(separator: "\n").last?.hasPrefix(#"{"summary":"publish","posted":0,"#) == true, "\(lonely.stderrText)")

        // Text: the plain line for people, last, no timestamp or level, each number once.
        let endpoint = children.folder.ipc("t.sock")
        let plain = try #require(
            try await children.run("plain", ["publish", "t.x", "--count", "2", "--no-wait", "--bind", endpoint, "--log-level", "critical"]))
        #expect(plain.stderrText == "nbus publish: posted 2, sent 0, unsent 0, unwanted 2 (no subscriber)\n", "\(plain.stderrText)")
    }

    @Test("request and reply take --connect FRONTEND,BACKEND, like publish and subscribe; a single endpoint is a usage error")
    func requestReplyConnect() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let broker = ["--connect", "\(frontend),\(backend)"]
        let responder = try children.start("reply", ["reply", "echo.>", "--echo", "--count", "1"] + broker)
        try #require(await responder.waitForStderr(containing: "answering echo.>"), "\(responder.describe())")
        let answered = try #require(try await children.run("request", ["request", "echo.say", "hi"] + broker))
        #expect(answered.status == 0 && answered.stdoutText == "hi\n", "\(answered.stderrText)")
        expectExit(await responder.waitForExit(), 0, responder)
        let single = try #require(try await children.run("request", ["request", "echo.say", "hi", "--connect", frontend]))
        #expect(single.status == 64 && single.stderrText.contains("FRONTEND,BACKEND"), "\(single.stderrText)")
    }

    /// request and reply arguments refused before connecting (exit 64), with their own command's
    /// usage, and what the message must say.
    static let refusedRequestArguments: [([String], String)] = [
        (["request", "text.*", "hi"], "invalid name 'text.*'"),
        (["request", "a.b", "hi", "--header", "novalue"], "--header takes key=value"),
        (["request", "a.b", "hi", "--header", "a=1", "--header", "a=2"], "--header a is given twice (a=1 and a=2)"),
        (["request", "a.b", "hi", "--header", "reply-to=x.y"], "sets its own reply-to header"),
        (["request", "a.b", "hi", "--header", "k=" + String(repeating: "v", count: 1_025)], "1025-byte value; the limit is 1024"),
        (["request", "a.b", "hi"] + (1...32).flatMap { ["--header", "k\($0)=v"] }, "with the reply-to header the request adds"),
        (["request", "a.b", "hi", "--frontend", "tcp://127.0.0.1:46550"], "--frontend and --backend name one broker each"),
        (["reply", "a..b", "--echo"], "invalid pattern 'a..b'"),
    ]

    @Test("request and reply refuse bad arguments at once, exit 64, with their own usage", arguments: refusedRequestArguments)
    func requestArgumentsRefused(arguments: [String], message: String) async throws {
        let children = try Children()
        defer { children.killAll() }
        let output = try #require(try await children.run(arguments[0], arguments, timeout: .seconds(20)))
        #expect(output.status == 64 && !output.bySignal, "exit \(output.status): \(output.stderrText.prefix(300))")
        #expect(output.stderrText.contains(message), "\(output.stderrText.prefix(300))")
        #expect(output.stderrText.contains("Usage: nbus \(arguments[0])"), "\(output.stderrText.prefix(400))")
    }

    @Test("publish and subscribe --connect given a FRONTEND,BACKEND pair say so, exit 2")
    func commaInOneEndpoint() async throws {
        let children = try Children()
        defer { children.killAll() }
        for command in [["publish", "a.b", "hi"], ["subscribe", "a.b"]] {
            let output = try #require(
                try await children.run(command[0], command + ["--connect", "tcp://127.0.0.1:46550,tcp://127.0.0.1:46551"]))
            #expect(output.status == 2, "\(output.stderrText)")
            #expect(output.stderrText.contains("one endpoint has no comma"), "\(output.stderrText)")
            #expect(!output.stderrText.contains("IPv6"), "\(output.stderrText)")
        }
    }

    @Test("a broker endpoint already in use names the option to change, exit 2")
    func endpointInUseNamesTheOption() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        for (option, arguments) in [
            ("--frontend", ["broker", "--frontend", frontend, "--backend", children.folder.ipc("other-b.sock")]),
            ("--backend", ["broker", "--frontend", children.folder.ipc("other-f.sock"), "--backend", backend]),
        ] {
            let second = try #require(try await children.run("second broker", arguments))
            #expect(!second.bySignal && second.status == 2, "\(second)")
            #expect(second.stderrText.contains("Address already in use"), "\(second.stderrText)")
            #expect(second.stderrText.contains("give \(option) another endpoint"), "\(second.stderrText)")
        }
    }

    @Test("nbus demo prints its report's absolute path on stdout, after the table")
    func demoPrintsReportPath() async throws {
        let children = try Children()
        defer { children.killAll() }
        let demo = try #require(try await children.run(
            "demo", ["demo", "--seconds", "0.5", "--baseline-seconds", "0", "--no-progress"], timeout: .seconds(120)))
        #expect(demo.status == 0, "\(demo.stderrText)")
        let last = demo.stdoutLines.last ?? ""
        #expect(last.hasPrefix("report: /") && last.hasSuffix("/report.html"), "\(demo.stdoutText.suffix(500))")
        #expect(FileManager.default.fileExists(atPath: String(last.dropFirst("report: ".count))), "\(last)")
    }

    @Test("reply's summary: one JSON object with the documented fields, after --count requests")
    func replySummary() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let responder = try children.start("reply", ["reply", "echo.>", "--echo", "--count", "1", "--format", "json"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering echo.>"), "\(responder.describe())")
        let answered = try #require(try await children.run("request", ["request", "echo.say", "hi"] + endpoints))
        #expect(answered.status == 0 && answered.stdoutText == "hi\n", "\(answered.stderrText)")
        let stopped = await responder.waitForExit()
        expectExit(stopped, 0, responder)
        let last = stopped?.stderrText.split(separator: "\n").last.map(String.init) ?? ""
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], "\(last)")
        #expect(Self.keys(object) == (try Self.documentedFields("reply")), "\(last)")
        #expect(summaryCounts(stopped?.stderrText, "reply", "received", "replied", "ok", "notSent", "unanswered") == [1, 1, 1, 0, 0])
    }

    @Test("--log-format json: numeric log fields are JSON numbers, and the broker's text lines say each number once")
    func logFieldNumbers() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (jsonBroker, _, _) = try await children.startBroker(["--log-format", "json"])
        #expect(await jsonBroker.waitForStderr(containing: "open files limit"), "\(jsonBroker.describe())")
        let line = jsonBroker.output.stderrText.split(separator: "\n").first { $0.contains("open files limit") } ?? ""
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["openFiles"] is NSNumber && !(object?["openFiles"] is String), "\(line)")
        jsonBroker.signal(SIGTERM)
        expectExit(await jsonBroker.waitForExit(), 0, jsonBroker)

        let textChildren = try Children()
        defer { textChildren.killAll() }
        let (textBroker, _, _) = try await textChildren.startBroker()
        #expect(await textBroker.waitForStderr(containing: "open files limit"), "\(textBroker.describe())")
        let text = textBroker.output.stderrText.split(separator: "\n").first { $0.contains("open files limit") } ?? ""
        #expect(!text.contains("openFiles="), "\(text)")
        textBroker.signal(SIGTERM)
        expectExit(await textBroker.waitForExit(), 0, textBroker)
    }

    @Test("--help of broker, publish and subscribe: the usage within the first lines, options next; -h and -V")
    func helpLayout() async throws {
        let children = try Children()
        defer { children.killAll() }
        for command in ["broker", "publish", "subscribe"] {
            for flag in ["--help", "-h"] {
                let output = try #require(try await children.run("help", [command, flag]))
                #expect(output.status == 0)
                let lines = output.stdoutLines
                let usage = lines.firstIndex { $0.hasPrefix("USAGE: nbus \(command)") }
                #expect(usage != nil && usage! <= 6, "\(command) \(flag): USAGE at line \(usage ?? -1):\n\(output.stdoutText)")
                #expect(output.stdoutText.contains("docs/command-line.md"), "\(command) \(flag)")
                #expect(output.stdoutText.contains("--format <format>"), "\(command) \(flag) lacks --format")
            }
        }
        for flag in ["-V", "--version"] {
            let version = try #require(try await children.run("version", [flag]))
            #expect(version.status == 0 && version.stdoutLines.count == 1 && version.stdoutText.first?.isNumber == true, "\(version.stdoutText)")
        }
        // One spelling for JSON output: --format; the benchmarks' old --json and --csv are usage errors.
        for command in [["bench", "throughput"], ["bench", "overload"], ["bench", "filter"], ["bench", "views"], ["bench", "sweep"]] {
            let output = try #require(try await children.run("help", command + ["--help"]))
            #expect(output.stdoutText.contains("--format <format>") && !output.stdoutText.contains("--json"), "\(command)")
            for old in ["--json", "--csv"] {
                // `bench sweep` first asks for its required options.
                let required = command.last == "sweep" ? ["--param", "rate", "--values", "100"] : []
                let refused = try #require(try await children.run("old-flag", command + required + [old]))
                #expect(refused.status == 64 && refused.stderrText.contains(old), "\(command) \(old): \(refused.status) \(refused.stderrText)")
            }
        }
    }

    @Test("the JSON summary snippet of docs/command-line.md runs as written", .enabled(if: findTool("jq") != nil, "jq is not installed"))
    func summarySnippet() async throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let start = try #require(text.range(of: "```sh\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        let snippet = String(text[start.upperBound..<end.lowerBound])
        #expect(snippet.hasPrefix("nbus publish "))
        let nbus = try NBusBinary.url().path
        let bash = try #require(findTool("bash"))
        let children = try Children()
        defer { children.killAll() }
        let shell = try children.start("snippet", command: bash, ["-c", "set -o pipefail; " + snippet.replacingOccurrences(of: "nbus ", with: nbus + " ")])
        let output = await shell.waitForExit()
        // pipefail passes on publish's own status: 2, nothing was sent (no broker here), which a
        // script sees; the summary is still the last line, posted 1.
        expectExit(output, 2, shell)
        #expect(output?.stdoutText == "1\n", "\(shell.describe())")
    }
}
