#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// End-to-end: real `nbus broker`, `nbus publish` and `nbus subscribe` processes over ipc, in a fresh
// /tmp/nbus-e2e-XXXXXXXX folder per test. Every child is SIGKILLed on every exit path
// (`defer { children.killAll() }`), every wait is bounded, and every step waits on something the
// processes show (the broker's banner, a subscriber's lines, an exit), never on a sleep. Publishers
// wait for their subscribers themselves (`--subscribers N`), which is what makes the start order free.

/// Waits for `nbus subscribe --count N`, whose N notifications have all arrived, to exit on its
/// own (bounded); a subscriber that does not is a failure, then stopped with SIGTERM.
func awaitSubscriberExit(_ child: Child) async -> ChildOutput? {
    if let output = await child.waitForExit() { return output }
    Issue.record("\(child.label) did not exit on its own after its output was complete")
    child.signal(SIGTERM)
    return await child.waitForExit()
}

/// Checks the notifications named `name`: one publisher, sequences 1...count in order, payloads
/// `prefix-1`...; returns that publisher's id.
@discardableResult
func expectStream(
    _ notifications: [ReceivedNotification], name: String, count: Int, payloadPrefix: String, at subscriber: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> String? {
    let stream = notifications.filter { $0.name == name }
    let publishers = Set(stream.map(\.publisherID))
    #expect(publishers.count == 1, "\(subscriber): \(name) from publishers \(publishers)", sourceLocation: sourceLocation)
    #expect(stream.count == count, "\(subscriber): \(stream.count) × \(name), expected \(count)", sourceLocation: sourceLocation)
    let sequences = stream.map(\.sequence)
    #expect(
        sequences == Array(1...count), "\(subscriber): \(name) sequences not 1...\(count) in order",
        sourceLocation: sourceLocation)
    let payloads = stream.map(\.payload)
    #expect(
        payloads == (1...count).map { "\(payloadPrefix)-\($0)" },
        "\(subscriber): \(name) payloads not \(payloadPrefix)-1...\(count) in order", sourceLocation: sourceLocation)
    return publishers.first
}

/// Expects a clean exit with `status` (not a signal).
func expectExit(
    _ output: ChildOutput?, _ status: Int32, _ child: Child, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let output else {
        Issue.record("did not exit in time:\n\(child.describe())", sourceLocation: sourceLocation)
        return
    }
    #expect(!output.bySignal && output.status == status, "expected exit \(status):\n\(child.describe())", sourceLocation: sourceLocation)
}

@Suite("nbus end to end (real processes, ipc)", .serialized, .timeLimit(.minutes(1)))
struct EndToEndTests {
    // MARK: 1. Brokered

    @Test("broker: 3 publishers, 2 subscribers; exactly once, in order, only matching names")
    func brokered() async throws {
        let children = try Children()
        defer { children.killAll() }
        let frontend = children.folder.ipc("f.sock")
        let backend = children.folder.ipc("b.sock")

        let broker = try children.start("broker", ["broker", "--frontend", frontend, "--backend", backend])
        let banner = await broker.waitForStdoutLine(containing: "broker: frontend")
        try #require(banner != nil, "the broker did not announce its endpoints:\n\(broker.describe())")
        #expect(banner == "broker: frontend \(frontend) backend \(backend)")

        let subscriberA = try children.start(
            "subscriber A",
            ["subscribe", "orders.>", "--connect", backend, "--count", "600", "--timeout", "30", "--format", "json"])
        let subscriberB = try children.start(
            "subscriber B",
            ["subscribe", "orders.created", "audit.*", "--connect", backend, "--count", "700", "--timeout", "30",
             "--format", "json"])
        // Each publisher waits until its subscribers' subscriptions reached it through the broker.
        let created = try children.start(
            "P1 orders.created",
            ["publish", "orders.created", "o-{n}", "--count", "300", "--connect", frontend, "--subscribers", "2",
             "--timeout", "30"])
        let shipped = try children.start(
            "P2 orders.shipped",
            ["publish", "orders.shipped", "s-{n}", "--count", "300", "--connect", frontend, "--subscribers", "1",
             "--timeout", "30"])
        let audit = try children.start(
            "P3 audit.login",
            ["publish", "audit.login", "a-{n}", "--count", "400", "--connect", frontend, "--subscribers", "1",
             "--timeout", "30"])

        for (publisher, count) in [(created, 300), (shipped, 300), (audit, 400)] {
            let output = await publisher.waitForExit()
            expectExit(output, 0, publisher)
            #expect(
                output?.stderrText.contains("posted \(count), sent \(count), unsent 0") == true, "\(publisher.describe())")
        }

        #expect(await subscriberA.waitForStdoutLines(600), "\(subscriberA.describe())")
        #expect(await subscriberB.waitForStdoutLines(700), "\(subscriberB.describe())")
        async let exitA = awaitSubscriberExit(subscriberA)
        async let exitB = awaitSubscriberExit(subscriberB)
        let (outputA, outputB) = await (exitA, exitB)
        expectExit(outputA, 0, subscriberA)
        expectExit(outputB, 0, subscriberB)

        let a = parseJSONLines(subscriberA.output.stdoutLines)
        #expect(a.other.isEmpty, "subscriber A printed gaps or unparsable lines: \(a.other.prefix(5))")
        #expect(a.notifications.count == 600)
        #expect(Set(a.notifications.map(\.name)) == ["orders.created", "orders.shipped"])
        let createdAtA = expectStream(a.notifications, name: "orders.created", count: 300, payloadPrefix: "o", at: "A")
        let shippedAtA = expectStream(a.notifications, name: "orders.shipped", count: 300, payloadPrefix: "s", at: "A")

        let b = parseJSONLines(subscriberB.output.stdoutLines)
        #expect(b.other.isEmpty, "subscriber B printed gaps or unparsable lines: \(b.other.prefix(5))")
        #expect(b.notifications.count == 700)
        #expect(Set(b.notifications.map(\.name)) == ["orders.created", "audit.login"])
        let createdAtB = expectStream(b.notifications, name: "orders.created", count: 300, payloadPrefix: "o", at: "B")
        let auditAtB = expectStream(b.notifications, name: "audit.login", count: 400, payloadPrefix: "a", at: "B")

        // Three publishers, three ids; P1's copies at A and B come from the same publisher.
        #expect(createdAtA != nil && createdAtA == createdAtB)
        #expect(Set([createdAtA, shippedAtA, auditAtB].compactMap { $0 }).count == 3)

        for (subscriber, count) in [(subscriberA, 600), (subscriberB, 700)] {
            #expect(
                summaryCounts(subscriber.output.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally", "rejectedMalformed")
                    == [count, 0, 0, 0], "\(subscriber.describe())")
        }

        broker.signal(SIGINT)
        let brokerOutput = await broker.waitForExit()
        expectExit(brokerOutput, 0, broker)
        let stopped = broker.output.stderrText.split(separator: "\n").map(String.init).first { $0.contains("nbus broker: stopped:") }
        try #require(stopped != nil, "no 'nbus broker: stopped:' line:\n\(broker.describe())")
        let counters = try Regex(#"from publishers \d+ msgs \(\d+ B, (\d+) notifications\), to subscribers \d+ msgs \(\d+ B, (\d+) notifications\)"#)
        let match = try #require(try counters.firstMatch(in: stopped!), "unexpected counters line: \(stopped!)")
        let fromPublishers = Int(match.output[1].substring ?? "") ?? -1
        let toSubscribers = Int(match.output[2].substring ?? "") ?? -1
        // 1,000 notifications (in fewer frames when batched), plus the control messages.
        #expect(fromPublishers >= 1_000, "\(stopped!)")
        #expect(toSubscribers >= 1_000, "\(stopped!)")
    }

    // MARK: 2. Direct

    @Test("direct: the publisher binds, the subscriber connects, either may start first", arguments: [true, false])
    func direct(subscriberFirst: Bool) async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("d.sock")
        let subscribeArguments = [
            "subscribe", "x.y", "--connect", endpoint, "--count", "100", "--timeout", "30", "--format", "json",
        ]
        let publishArguments = ["publish", "x.y", "d-{n}", "--bind", endpoint, "--count", "100", "--timeout", "30"]

        let subscriber: Child
        let publisher: Child
        if subscriberFirst {
            subscriber = try children.start("subscriber", subscribeArguments)
            publisher = try children.start("publisher", publishArguments)
        } else {
            publisher = try children.start("publisher", publishArguments)
            subscriber = try children.start("subscriber", subscribeArguments)
        }

        let published = await publisher.waitForExit()
        expectExit(published, 0, publisher)
        #expect(published?.stderrText.contains("posted 100, sent 100, unsent 0") == true, "\(publisher.describe())")

        #expect(await subscriber.waitForStdoutLines(100), "\(subscriber.describe())")
        let received = await awaitSubscriberExit(subscriber)
        expectExit(received, 0, subscriber)
        let parsed = parseJSONLines(subscriber.output.stdoutLines)
        #expect(parsed.other.isEmpty, "gaps or unparsable lines: \(parsed.other.prefix(5))")
        expectStream(parsed.notifications, name: "x.y", count: 100, payloadPrefix: "d", at: "subscriber")
        #expect(
            summaryCounts(subscriber.output.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally") == [100, 0, 0],
            "\(subscriber.describe())")
    }

    // MARK: 3. --lines

    @Test("publish --lines: one notification per stdin line")
    func linesAsText() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("l.sock")
        let lines = ["first line", "  indented, with commas", "ünïcödé ✓", "{\"not\": \"parsed\"}", "last"]

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "logs.app", "--connect", endpoint, "--count", "5", "--timeout", "30", "--format", "json"])
        let publisher = try children.start(
            "publisher", ["publish", "logs.app", "--lines", "--bind", endpoint, "--timeout", "30"], withStdin: true)
        try publisher.writeStdinAndClose(lines.joined(separator: "\n") + "\n")

        let published = await publisher.waitForExit()
        expectExit(published, 0, publisher)
        #expect(published?.stderrText.contains("posted 5, sent 5, unsent 0") == true, "\(publisher.describe())")

        #expect(await subscriber.waitForStdoutLines(5), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let parsed = parseJSONLines(subscriber.output.stdoutLines)
        #expect(parsed.other.isEmpty, "gaps or unparsable lines: \(parsed.other)")
        #expect(parsed.notifications.map(\.payload) == lines)
        #expect(parsed.notifications.map(\.name) == Array(repeating: "logs.app", count: 5))
        #expect(parsed.notifications.map(\.sequence) == Array(1...5))
    }

    @Test("publish --lines --input json: good lines arrive, a malformed one is reported, exit 2")
    func linesAsJSON() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("j.sock")
        let input = [
            #"{"payload": "one"}"#,
            #"{"name": "logs.db", "payload": "two", "headers": {"k": "v"}}"#,
            #"this is { not json"#,
            #"{"payload": "three"}"#,
        ]

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "logs.>", "--connect", endpoint, "--count", "3", "--timeout", "30", "--format", "json"])
        let publisher = try children.start(
            "publisher", ["publish", "logs.app", "--lines", "--input", "json", "--bind", endpoint, "--timeout", "30"],
            withStdin: true)
        try publisher.writeStdinAndClose(input.joined(separator: "\n") + "\n")

        let published = await publisher.waitForExit()
        expectExit(published, 2, publisher)
        let stderr = published?.stderrText ?? ""
        #expect(stderr.contains("line 3"), "the malformed line is not named:\n\(publisher.describe())")
        #expect(stderr.contains("skipped 1 malformed"), "\(publisher.describe())")

        #expect(await subscriber.waitForStdoutLines(3), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let parsed = parseJSONLines(subscriber.output.stdoutLines)
        #expect(parsed.other.isEmpty, "gaps or unparsable lines: \(parsed.other)")
        #expect(parsed.notifications.map(\.payload) == ["one", "two", "three"])
        #expect(parsed.notifications.map(\.name) == ["logs.app", "logs.db", "logs.app"])
        // Sequences count per (publisher, name).
        #expect(parsed.notifications.map(\.sequence) == [1, 1, 2])
        #expect(parsed.notifications.map(\.headers) == [[:], ["k": "v"], [:]])
        #expect(Set(parsed.notifications.map(\.publisherID)).count == 1)
    }

    // MARK: 4. CLI errors

    /// (arguments, text the error must contain)
    static let usageErrors: [([String], String)] = [
        (["publish", "bad..name"], "bad..name"),
        (["subscribe"], "<pattern> ..."),
        (["subscribe", "a*"], "'a*'"),
        (["subscribe", "a*"], "wildcard"),
        (["publish", "x", "--count", "0"], "--count"),
    ]

    @Test("argument errors: non-zero exit, a message naming the problem", arguments: usageErrors)
    func usageError(arguments: [String], mentions: String) async throws {
        let children = try Children()
        defer { children.killAll() }
        let output = try await children.run("nbus", arguments)
        let result = try #require(output)
        #expect(!result.bySignal && result.status != 0, "\(arguments): \(result)")
        #expect(result.stderrText.contains(mentions), "\(arguments): stderr lacks \(mentions): \(result.stderrText)")
    }

    @Test("publish with no subscriber: exit 2 after --timeout, saying so")
    func publishWithoutSubscriber() async throws {
        let children = try Children()
        defer { children.killAll() }
        // Bound, so nothing is missing but the subscriber (NoBrokerTests: connecting to nothing).
        let endpoint = children.folder.ipc("nobody.sock")
        let output = try #require(
            try await children.run("publisher", ["publish", "x", "--bind", endpoint, "--timeout", "0.5"]))
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.contains("no subscriber for x reached this publisher"), "\(output.stderrText)")
    }

    @Test("publish --no-wait with no subscriber: exit 2, and an error that nothing was sent")
    func noWaitReachedNobody() async throws {
        let children = try Children()
        defer { children.killAll() }
        // Bound: nothing is missing but the subscriber (NoBrokerTests: connecting to nothing).
        let output = try #require(
            try await children.run(
                "publish", ["publish", "nobody.there", "--count", "2", "--no-wait", "--bind", children.folder.ipc("none.sock")]))
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.hasSuffix("\nnbus publish: posted 2, sent 0, unsent 0, unwanted 2 (no subscriber)\n"), "\(output.stderrText)")
        #expect(output.stderrText.contains("error nbus publish: nothing was sent: no subscriber of nobody.there"), "\(output.stderrText)")
    }

    @Test("an unusable endpoint: exit 2 naming the forms, or with libzmq's error; no crash")
    func badEndpoint() async throws {
        let children = try Children()
        defer { children.killAll() }
        // No transport libzmq knows: refused before anything opens, saying what an endpoint is.
        for arguments in [
            ["subscribe", "x", "--connect", "bogus://nowhere", "--count", "1", "--timeout", "5"],
            ["publish", "x", "--connect", "bogus://nowhere", "--timeout", "5"],
        ] {
            let output = try #require(try await children.run("nbus", arguments))
            #expect(!output.bySignal && output.status == 2, "\(arguments): \(output)")
            #expect(output.stderrText.contains("bogus://nowhere: an endpoint is tcp://HOST:PORT"), "\(arguments): \(output.stderrText)")
        }
        // A port that is not a number: refused too, before libzmq's bare "Invalid argument".
        let notANumber = try #require(
            try await children.run("nbus", ["subscribe", "x", "--connect", "tcp://127.0.0.1:abc", "--count", "1", "--timeout", "5"]))
        #expect(!notANumber.bySignal && notANumber.status == 2, "\(notANumber)")
        #expect(notANumber.stderrText.contains("tcp://127.0.0.1:abc: the port must be a number from 0 to 65535"), "\(notANumber.stderrText)")
        // A well-formed endpoint libzmq refuses (an address this machine does not have; 192.0.2.1
        // is TEST-NET-1): its error, exit 2.
        let output = try #require(
            try await children.run("nbus", ["subscribe", "x", "--bind", "tcp://192.0.2.1:23999", "--count", "1", "--timeout", "5"]))
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.contains("zmq_bind tcp://192.0.2.1:23999"), "\(output.stderrText)")
    }

    @Test("broker with frontend and backend on the same tcp port: an error, no crash")
    func brokerSameTCPPort() async throws {
        let children = try Children()
        defer { children.killAll() }
        // Whether the port is free (the backend bind fails: exit 2) or taken (the frontend bind fails), or
        // the command refuses the pair up front, it is an error.
        let endpoint = "tcp://127.0.0.1:47391"
        let output = try #require(
            try await children.run("broker", ["broker", "--frontend", endpoint, "--backend", endpoint]))
        #expect(!output.bySignal && output.status != 0, "\(output)")
        let stderr = output.stderrText
        #expect(stderr.contains("in use") || stderr.contains(endpoint), "no clear error: \(stderr)")
    }

    @Test("A tcp port above 65535 is an unusable endpoint (exit 2) naming the option, in every command")
    func outOfRangePortIsUsageError() async throws {
        let children = try Children()
        defer { children.killAll() }
        let runs: [(String, [String])] = [
            ("--frontend", ["broker", "--frontend", "tcp://127.0.0.1:99999"]),
            ("--backend", ["broker", "--backend", "tcp://127.0.0.1:65536"]),
            ("--bind", ["publish", "a.b", "--bind", "tcp://127.0.0.1:65537", "--no-wait"]),
            ("--connect", ["subscribe", "a.b", "--connect", "tcp://127.0.0.1:700000"]),
        ]
        for (option, arguments) in runs {
            let output = try #require(try await children.run(arguments[0], arguments, timeout: .seconds(10)))
            #expect(!output.bySignal && output.status == 2, "\(arguments): \(output)")
            #expect(output.stderrText.contains("\(option) tcp://") && output.stderrText.contains("out of range"), "\(output.stderrText)")
        }
    }

    @Test("A bad benchmark option is a usage error (64) with that command's usage, before anything starts")
    func badBenchOptionsAreUsageErrors() async throws {
        let children = try Children()
        defer { children.killAll() }
        let runs: [([String], String)] = [
            (["bench", "views", "--selectivity", "2"], "--selectivity must be 0...1"),
            (["bench", "throughput", "--count", "0"], "--count must be at least 2"),
            (["bench", "overload", "--seconds", "0"], "--seconds must be from 0.001 to 86400 seconds"),
            (["bench", "filter", "--names", "1"], "--names must be at least 2"),
            (["bench", "sweep", "--param", "rate", "--values", "10,abc"], "rate value 'abc'"),
        ]
        for (arguments, message) in runs {
            let output = try #require(try await children.run(arguments[1], arguments, timeout: .seconds(10)))
            #expect(!output.bySignal && output.status == 64, "\(arguments): \(output)")
            #expect(output.stderrText.contains(message), "\(arguments): \(output.stderrText)")
            #expect(output.stderrText.contains("Usage: nbus bench \(arguments[1])"), "\(arguments): \(output.stderrText)")
        }
    }

    @Test("A failed bind names the endpoint that failed")
    func bindErrorNamesEndpoint() async throws {
        let children = try Children()
        defer { children.killAll() }
        let missing = children.folder.path + "/no-such-folder/x.sock"
        let output = try #require(
            try await children.run(
                "subscriber", ["subscribe", "a.b", "--bind", children.folder.ipc("fine.sock"), "--bind", "ipc://" + missing],
                timeout: .seconds(10)))
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.contains("zmq_bind ipc://\(missing)"), "\(output.stderrText)")
    }

    @Test(
        "broker with frontend and backend on the same ipc endpoint: a clear error, no crash")
    func brokerSameIPCEndpoint() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("same.sock")
        let broker = try children.start("broker", ["broker", "--frontend", endpoint, "--backend", endpoint])
        let output = await broker.waitForExit(timeout: .seconds(10))
        try #require(output != nil, "the broker started on one endpoint twice:\n\(broker.describe())")
        #expect(output!.bySignal == false && output!.status != 0, "\(broker.describe())")
        #expect(output!.stderrText.contains(endpoint), "the error does not name the endpoint:\n\(broker.describe())")
    }

    @Test(
        "subscribe exits on its own: 0 after --count, 1 when --timeout comes first")
    func subscribeExitsOnItsOwn() async throws {
        let children = try Children()
        defer { children.killAll() }

        // --timeout first: nobody publishes (bound, so no broker is missing: NoBrokerTests).
        let lonely = try #require(
            try await children.run(
                "subscriber", ["subscribe", "x", "--bind", children.folder.ipc("nobody.sock"), "--count", "1",
                               "--timeout", "0.5"], timeout: .seconds(10)))
        #expect(!lonely.bySignal && lonely.status == 1, "\(lonely)")
        #expect(lonely.stderrText.contains("printed 0 of 1"), "\(lonely.stderrText)")

        // --count reached.
        let endpoint = children.folder.ipc("d.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "x", "--connect", endpoint, "--count", "1", "--timeout", "30"])
        let publisher = try children.start("publisher", ["publish", "x", "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        #expect(await subscriber.waitForStdoutLines(1), "\(subscriber.describe())")
        expectExit(await subscriber.waitForExit(timeout: .seconds(10)), 0, subscriber)
        #expect(subscriber.output.stderrText.contains("printed 1; lost upstream 0"), "\(subscriber.describe())")
    }

    // MARK: 5. Signals

    @Test("SIGTERM or SIGINT stops a running subscriber: summary on stderr, exit 0", arguments: [SIGTERM, SIGINT])
    func signalledSubscriber(signal: Int32) async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("s.sock")
        let subscriber = try children.start("subscriber", ["subscribe", "x.y", "--connect", endpoint])
        let publisher = try children.start(
            "publisher", ["publish", "x.y", "p-{n}", "--count", "3", "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        // Three lines printed: the subscriber is running (and its signal handling with it).
        try #require(await subscriber.waitForStdoutLines(3), "\(subscriber.describe())")

        subscriber.signal(signal)
        let output = await subscriber.waitForExit()
        expectExit(output, 0, subscriber)
        #expect(subscriber.output.stdoutLines.count == 3)
        #expect(
            output?.stderrText.contains("nbus subscribe: printed 3; lost upstream 0, dropped locally 0, rejected malformed 0")
                == true, "\(subscriber.describe())")
    }
}
