import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("nbus request and nbus reply through a broker (real processes)", .timeLimit(.minutes(2)))
struct RequestReplyEndToEndTests {
    @Test("--echo answers with the request's payload; --count ends the responder after its last reply")
    func echo() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let responder = try children.start("reply", ["reply", "echo.>", "--echo", "--count", "2"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")
        for text in ["hello", "again"] {
            let output = try await children.run("request", ["request", "echo.say", text] + endpoints)
            let request = try #require(output)
            #expect(request.status == 0 && request.stdoutText == "\(text)\n", "\(request.stderrText)")
        }
        expectExit(await responder.waitForExit(), 0, responder)
    }

    @Test("reply '>' does not take its own replies for requests; two header keys with one variable are said, not dropped silently")
    func ownRepliesAndHeaderVariables() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let everything = try children.start("reply", ["reply", ">", "--echo", "--count", "2", "--format", "json"] + endpoints)
        try #require(await everything.waitForStderr(containing: "answering"), "\(everything.describe())")
        for text in ["one", "two"] {
            let request = try #require(try await children.run("request", ["request", "any.thing", text] + endpoints))
            #expect(request.status == 0 && request.stdoutText == "\(text)\n", "\(request.stderrText)")
        }
        expectExit(await everything.waitForExit(), 0, everything)
        let summary = everything.output.stderrText.split(separator: "\n").last.map(String.init) ?? ""
        // Its two replies (on _inbox names, which '>' matches) are neither received nor ignored.
        #expect(summary.contains(#""received":2"#) && summary.contains(#""ignored":0"#), "\(everything.output.stderrText.suffix(600))")
        #expect(!everything.output.stderrText.contains("no valid reply-to header"), "\(everything.output.stderrText.suffix(600))")

        let shell = try children.start("reply-env", ["reply", "cmd.*", "--command", "env | grep '^NBUS_HEADER_A_B='", "--count", "1"] + endpoints)
        try #require(await shell.waitForStderr(containing: "answering"), "\(shell.describe())")
        let request = try #require(
            try await children.run("request", ["request", "cmd.h", "x", "--header", "a-b=1", "--header", "a.b=2"] + endpoints))
        // Key order: a-b before a.b; a.b's value is said in a warning.
        #expect(request.status == 0 && request.stdoutText == "NBUS_HEADER_A_B=1\n", "\(request.stdoutText) \(request.stderrText)")
        expectExit(await shell.waitForExit(), 0, shell)
        #expect(shell.output.stderrText.contains("headers a-b and a.b are both NBUS_HEADER_A_B"), "\(shell.output.stderrText.suffix(600))")
    }

    @Test("reply --http: the requests it received on /metrics, /healthz ok; SIGINT stops it and its server (exit 0)")
    func replyMetrics() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let responder = try children.start(
            "reply", ["reply", "echo.>", "--echo", "--http", "127.0.0.1:0", "--metrics-interval", "0.1"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")
        try #require(await responder.waitForStderr(containing: "monitoring on http://"), "\(responder.describe())")
        let port = try #require(monitoringPort(in: responder.output.stderrText))
        for text in ["one", "two"] {
            let request = try #require(try await children.run("request", ["request", "echo.say", text] + endpoints))
            #expect(request.status == 0 && request.stdoutText == "\(text)\n", "\(request.stderrText)")
        }
        let body = try httpGet(port: port, "/metrics").body
        #expect(metricValue(body, #"nbus_subscription_delivered_total{pattern="echo.>"}"#) == 2, "\(body)")
        #expect((metricValue(body, "nbus_bus_posted_total") ?? 0) >= 2, "the replies are posts: \(body)")
        #expect(try httpGet(port: port, "/healthz").status == 200)
        responder.signal(SIGINT)
        expectExit(await responder.waitForExit(), 0, responder)
        #expect((try? httpGet(port: port, "/healthz")) == nil, "the server stops with the command")
    }

    @Test("--command: payload on stdin, name and headers in the environment, stdout back; a failing command is exit 3 with its reason")
    func command() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let script = #"if [ "$NBUS_HEADER_MODE" = fail ]; then echo "refused $NBUS_NAME" >&2; exit 4; fi; printf '%s:' "$NBUS_NAME"; tr a-z A-Z"#
        let responder = try children.start("reply", ["reply", "text.*", "--command", script] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")

        let upper = try #require(try await children.run("request", ["request", "text.upper", "shout"] + endpoints))
        #expect(upper.status == 0 && upper.stdoutText == "text.upper:SHOUT\n", "\(upper.stderrText)")

        // `-`: the payload is standard input, to its end (bytes as they came, newline included).
        let piped = try children.start("request-stdin", ["request", "text.upper", "-"] + endpoints, withStdin: true)
        try piped.writeStdinAndClose("from a pipe\n")
        let pipedOutput = await piped.waitForExit()
        expectExit(pipedOutput, 0, piped)
        #expect(pipedOutput?.stdoutText == "text.upper:FROM A PIPE\n", "\(piped.describe())")

        let failed = try #require(
            try await children.run("request-fail", ["request", "text.upper", "x", "--header", "mode=fail"] + endpoints))
        #expect(failed.status == 3, "\(failed.stderrText)")
        #expect(failed.stderrText.contains("the responder failed: refused text.upper"), "\(failed.stderrText)")
        _ = await stopSubscriber(responder)
    }

    @Test("--command-timeout: a command that hangs is stopped and answered as an error; the next request is answered")
    func commandTimeout() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        // The sleep is the shell's child: stopping the shell alone would leave it running. Its
        // length is this run's own, so another run's sleep is never taken for it.
        let sleep = "sleep 97.\(Int.random(in: 100_000...999_999))"
        let script = #"if [ "$NBUS_HEADER_MODE" = hang ]; then "# + sleep + #"; fi; tr a-z A-Z"#
        let responder = try children.start(
            "reply", ["reply", "text.*", "--command", script, "--command-timeout", "1"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")

        let hung = try #require(
            try await children.run(
                "request-hang", ["request", "text.upper", "x", "--header", "mode=hang", "--timeout", "20"] + endpoints))
        #expect(hung.status == 3, "\(hung.stderrText)")
        #expect(hung.stderrText.contains("the command did not finish within 1"), "\(hung.stderrText)")
        // (The responder's own command line holds the script: look for the sleep itself.)
        #expect(!processCommandLines().contains { $0.hasPrefix(sleep) }, "the command's child was left running")

        // Not held by the hung one: the next request is answered.
        let next = try #require(try await children.run("request-next", ["request", "text.upper", "after"] + endpoints))
        #expect(next.status == 0 && next.stdoutText == "AFTER\n", "\(next.stderrText)")
        _ = await stopSubscriber(responder)
    }

    @Test("Stopping nbus reply while a command runs stops the command and what it started (one that ignores SIGTERM too)")
    func shutdownStopsTheCommand() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let sleep = "sleep 41.\(Int.random(in: 100_000...999_999))"
        // The command says it started through a FIFO the test reads: a real signal, no polling.
        let fifo = children.folder.path + "/started.fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        let responder = try children.start(
            "reply", ["reply", "slow.*", "--command", "trap '' TERM; echo started > \(fifo); \(sleep); echo done"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")
        let request = try children.start("request", ["request", "slow.op", "x", "--timeout", "30"] + endpoints)
        let said = try await withTimeout(standardWait, "the command's start") {
            try await runBlocking { () -> String in
                // Opening blocks until the command opens its end; reading ends at its close.
                guard let handle = FileHandle(forReadingAtPath: fifo) else { return "" }
                defer { try? handle.close() }
                return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            }
        }
        #expect(said == "started\n")
        responder.signal(SIGINT)
        expectExit(await responder.waitForExit(), 0, responder)
        #expect(!processCommandLines().contains { $0.hasPrefix(sleep) }, "the command's sleep was left running")
        #expect(!processCommandLines().contains { $0.contains("trap '' TERM; \(sleep)") && $0.hasPrefix("/bin/sh") },
                "the command's shell was left running")
        // The request taken is answered all the same, at once: the responder is stopping.
        let answered = await request.waitForExit()
        #expect(
            answered?.status == 3 && answered?.stderrText.contains("the responder is stopping") == true, "\(request.describe())")
    }

    @Test("The README's two lines: nbus reply 'text.*' --command 'tr a-z A-Z', then nbus request text.upper shout prints SHOUT")
    func readmeLines() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let responder = try children.start("reply", ["reply", "text.*", "--command", "tr a-z A-Z"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")
        let request = try #require(try await children.run("request", ["request", "text.upper", "shout"] + endpoints))
        #expect(request.status == 0 && request.stdoutText == "SHOUT\n", "\(request.stderrText)")
        _ = await stopSubscriber(responder)
    }

    @Test("Nothing answers the name: exit 2 at once; a responder that never replies: exit 1 after --timeout")
    func noAnswer() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let nobody = try #require(try await children.run("request-nobody", ["request", "nobody.home"] + endpoints))
        #expect(nobody.status == 2, "\(nobody.stderrText)")
        #expect(nobody.stderrText.contains("no responders"), "\(nobody.stderrText)")
        #expect(!nobody.stderrText.contains("no broker reached"), "\(nobody.stderrText)")

        // No broker at all: the same exit, and the message says what is missing.
        let alone = try #require(
            try await children.run(
                "request-alone",
                ["request", "nobody.home", "--frontend", children.folder.ipc("none-f.sock"),
                 "--backend", children.folder.ipc("none-b.sock")]))
        #expect(alone.status == 2, "\(alone.stderrText)")
        #expect(alone.stderrText.contains("no broker reached at"), "\(alone.stderrText)")

        // A responder that takes the request and is still busy when the requester gives up.
        let busy = try children.start("reply-busy", ["reply", "slow.op", "--command", "sleep 5"] + endpoints)
        try #require(await busy.waitForStderr(containing: "answering"), "\(busy.describe())")
        let silent = try #require(
            try await children.run("request-silent", ["request", "slow.op", "--timeout", "0.3"] + endpoints))
        #expect(silent.status == 1, "\(silent.stderrText)")
        #expect(silent.stderrText.contains("no reply to slow.op within 0.3 s"), "\(silent.stderrText)")
    }
}

@Suite("nbus request and nbus reply log like broker, publish and subscribe (real processes)", .timeLimit(.minutes(2)))
struct RequestReplyLoggingTests {
    @Test("--log-format json: every line of request and reply is a JSON object; reply ends with its summary on SIGINT")
    func jsonLines() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let responder = try children.start("reply", ["reply", "echo.>", "--echo", "--log-format", "json"] + endpoints)
        try #require(await responder.waitForStderr(containing: #""message":"answering echo.>"#), "\(responder.describe())")
        let answered = try #require(try await children.run("request", ["request", "echo.say", "hi", "--log-format", "json"] + endpoints))
        #expect(answered.status == 0 && answered.stdoutText == "hi\n" && answered.stderrText.isEmpty, "\(answered.stderrText)")
        let nobody = try #require(
            try await children.run("request-nobody", ["request", "nobody.home", "--log-format", "json"] + endpoints))
        #expect(nobody.status == 2, "\(nobody.stderrText)")
        let errors = try jsonObjects(nobody.stderrText)
        #expect(
            errors.count == 1 && errors.first?["level"] as? String == "error"
                && (errors.first?["message"] as? String)?.contains("no responders") == true, "\(nobody.stderrText)")

        responder.signal(SIGINT)
        let stopped = try #require(await responder.waitForExit())
        #expect(stopped.status == 0, "\(responder.describe())")
        let lines = try jsonObjects(stopped.stderrText)
        // Log lines, then the summary: one JSON object too, the last line, not a log line.
        #expect(lines.dropLast().allSatisfy { $0["timestamp"] is String && $0["level"] is String && $0["label"] as? String == "nbus reply" })
        let summary = try #require(lines.last, "\(stopped.stderrText)")
        #expect(summary["summary"] as? String == "reply" && summary["timestamp"] == nil, "\(summary)")
        // Counts as JSON numbers, as a script compares them.
        #expect(
            summary["received"] as? Int == 1 && summary["replied"] as? Int == 1 && summary["ok"] as? Int == 1
                && summary["notSent"] as? Int == 0, "\(summary)")
    }

    @Test("--log-level: request's error and reply's info lines and summary go below the level; text lines carry time and level")
    func levels() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend]
        let quiet = try #require(
            try await children.run("request-quiet", ["request", "nobody.home", "--log-level", "critical"] + endpoints))
        #expect(quiet.status == 2 && quiet.stderrText.isEmpty, "\(quiet.stderrText)")
        let loud = try #require(try await children.run("request-loud", ["request", "nobody.home"] + endpoints))
        #expect(
            loud.stderrText.range(
                of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z error nbus request: no responders: nothing subscribes to nobody.home"#,
                options: .regularExpression) != nil, "\(loud.stderrText)")

        // A responder that logs only warnings says nothing while all is well: "answering" cannot
        // be awaited, so requests are tried until one is answered ("no responders" is true now:
        // said only once the broker's subscriptions are all known, so each try is a real look).
        let responder = try children.start("reply-quiet", ["reply", "echo.>", "--echo", "--log-level", "warning"] + endpoints)
        var answered = false
        for attempt in 1...100 where !answered {
            let request = try #require(try await children.run("request-\(attempt)", ["request", "echo.say", "x"] + endpoints))
            answered = request.status == 0
            #expect(answered || request.status == 2, "\(request.stderrText)")
        }
        #expect(answered)
        responder.signal(SIGTERM)
        let stopped = try #require(await responder.waitForExit())
        // Nothing logged; the summary is no log line: it stays, alone.
        let quietLines = stopped.stderrText.split(separator: "\n")
        #expect(
            stopped.status == 0 && quietLines.count == 1 && quietLines.first?.hasPrefix("nbus reply: received ") == true,
            "\(responder.describe())")

        // At the default level the summary ends the run: one plain line, no timestamp.
        let normal = try children.start("reply", ["reply", "echo.>", "--echo"] + endpoints)
        try #require(await normal.waitForStderr(containing: "answering"), "\(normal.describe())")
        normal.signal(SIGTERM)
        let ended = try #require(await normal.waitForExit())
        #expect(ended.status == 0, "\(normal.describe())")
        let last = ended.stderrText.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            last.range(
                of: #"^nbus reply: received 0 request\(s\): replied 0 \(ok 0, error 0\), not sent 0, ignored 0 without a reply-to, unanswered 0$"#,
                options: .regularExpression) != nil, "\(ended.stderrText)")
    }

    @Test("nbus --help does not limit the log options to some commands; every command that logs lists them")
    func help() async throws {
        let children = try Children()
        defer { children.killAll() }
        let top = try #require(try await children.run("help", ["--help"]))
        #expect(top.status == 0)
        let text = top.stdoutText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("every command that logs takes"), "\(top.stdoutText)")
        #expect(!text.contains("on broker, publish, subscribe and keygen"), "\(top.stdoutText)")
        for command in ["broker", "publish", "subscribe", "request", "reply", "keygen"] {
            let help = try #require(try await children.run("help-\(command)", [command, "--help"]))
            #expect(help.stdoutText.contains("--log-level") && help.stdoutText.contains("--log-format"), "\(command): \(help.stdoutText)")
        }
    }
}

/// Each line of `text` as a JSON object (a line that is not one fails the test).
private func jsonObjects(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
    }
}

/// The command lines of this machine's processes (from /proc), to find one left running.
private func processCommandLines() -> [String] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    return entries.compactMap { entry -> String? in
        guard Int32(entry) != nil, let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
        return String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }
}
