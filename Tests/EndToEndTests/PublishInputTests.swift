#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// `nbus publish` input and argument handling, with real processes over ipc in a fresh temp folder:
// `--lines` as bytes, skipped lines counted, JSON lines in the shape `nbus subscribe --format json`
// prints, which subscribers are waited for, and arguments refused before any wait. Every wait is
// bounded and waits on something a process shows, never on a sleep.

/// Starts `nbus arguments...` reading standard input from a file holding `input` (written into the
/// temp folder first): exact bytes, and no pipe for the test to keep fed.
private func startWithInput(_ children: Children, _ label: String, _ input: [UInt8], _ arguments: [String]) throws -> Child {
    let file = "\(children.folder.path)/input-\(label.filter { $0.isLetter || $0.isNumber }).bin"
    try Data(input).write(to: URL(fileURLWithPath: file))
    return try children.start(
        label, command: URL(fileURLWithPath: "/bin/sh"),
        ["-c", #"exec "$0" "$@" < "$NBUS_TEST_INPUT""#, children.executable.path] + arguments,
        environment: ["NBUS_TEST_INPUT": file])
}

/// The notification objects among `nbus subscribe --format json` lines (gap lines left out).
private func notificationObjects(_ lines: [String]) -> [[String: Any]] {
    lines.compactMap { line in
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            object["gap"] == nil
        else { return nil }
        return object
    }
}

/// A notification's payload bytes from its JSON object: `payload` as UTF-8, or `payloadBase64`.
private func payloadBytes(_ object: [String: Any]) -> [UInt8]? {
    if let text = object["payload"] as? String { return Array(text.utf8) }
    if let encoded = object["payloadBase64"] as? String, let data = Data(base64Encoded: encoded) { return Array(data) }
    return nil
}

@Suite("nbus publish: input lines and arguments (real processes, ipc)", .serialized, .timeLimit(.minutes(1)))
struct PublishInputTests {
    // MARK: --lines as text

    @Test("--lines: a line over the maximum payload is skipped and counted, the rest is sent, exit 2")
    func overlongTextLineIsSkipped() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("l.sock")
        let input = Array("first\n".utf8) + Array(repeating: UInt8(ascii: "y"), count: 2_000_000) + Array("\nthird\n".utf8)

        let subscriber = try children.start(
            "subscriber", ["subscribe", "l.x", "--connect", endpoint, "--count", "2", "--timeout", "30", "--format", "json"])
        let publisher = try startWithInput(
            children, "publisher", input, ["publish", "l.x", "--lines", "--bind", endpoint, "--timeout", "30"])

        let published = await publisher.waitForExit()
        expectExit(published, 2, publisher)
        let stderr = published?.stderrText ?? ""
        #expect(
            stderr.contains("line 2: payload of 2000000 bytes exceeds the maximum of 1048576, skipped"), "\(publisher.describe())")
        #expect(stderr.contains("posted 2, sent 2, unsent 0, skipped 1 "), "\(publisher.describe())")

        #expect(await subscriber.waitForStdoutLines(2), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let received = parseJSONLines(subscriber.output.stdoutLines)
        #expect(received.notifications.map(\.payload) == ["first", "third"])
        #expect(received.notifications.map(\.sequence) == [1, 2])
    }

    @Test("--lines: bytes are sent unchanged (not UTF-8 too); a \\r before \\n is removed; a last unterminated line is sent")
    func textLinesAreBytes() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("b.sock")
        let lines: [[UInt8]] = [
            Array("bad ".utf8) + [0xFF, 0xFE] + Array(" utf8".utf8), Array("crlf".utf8), [], Array("a\rb".utf8),
            Array("ünïcödé".utf8), Array("last".utf8),
        ]
        let input =
            lines[0] + Array("\r\n".utf8) + lines[1] + Array("\r\n".utf8) + Array("\n".utf8) + lines[3] + Array("\n".utf8)
            + lines[4] + Array("\n".utf8) + lines[5]

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "b.x", "--connect", endpoint, "--count", "\(lines.count)", "--timeout", "30", "--format", "json"])
        let publisher = try startWithInput(
            children, "publisher", input, ["publish", "b.x", "--lines", "--bind", endpoint, "--timeout", "30"])

        let published = await publisher.waitForExit()
        expectExit(published, 0, publisher)
        #expect(
            published?.stderrText.contains("posted 6, sent 6, unsent 0, skipped 0 ") == true, "\(publisher.describe())")
        #expect(await subscriber.waitForStdoutLines(lines.count), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let received = notificationObjects(subscriber.output.stdoutLines)
        #expect(received.map(payloadBytes) == lines.map { Optional($0) }, "\(subscriber.describe())")
    }

    // MARK: --lines --input json

    @Test("--input json takes back what subscribe --format json prints: names, bytes, headers, content types")
    func subscribeOutputFedBack() async throws {
        let children = try Children()
        defer { children.killAll() }
        let first = children.folder.ipc("one.sock")
        let second = children.folder.ipc("two.sock")

        // Round 1: a text payload with a header and a content type, then a payload that is not UTF-8.
        let subscriberOne = try children.start(
            "subscriber 1", ["subscribe", "r.>", "--connect", first, "--count", "2", "--timeout", "30", "--format", "json"])
        let textPublisher = try children.start(
            "text publisher",
            ["publish", "r.text", "hello", "--header", "k=v", "--content-type", "json", "--bind", first, "--timeout", "30"])
        expectExit(await textPublisher.waitForExit(), 0, textPublisher)
        let bytesPublisher = try startWithInput(
            children, "bytes publisher", [0xC3, 0x28, 0x00, 0xFF, UInt8(ascii: "\n")],
            ["publish", "r.bytes", "--lines", "--content-type", "200", "--bind", first, "--timeout", "30"])
        expectExit(await bytesPublisher.waitForExit(), 0, bytesPublisher)
        #expect(await subscriberOne.waitForStdoutLines(2), "\(subscriberOne.describe())")
        expectExit(await awaitSubscriberExit(subscriberOne), 0, subscriberOne)
        let printed = subscriberOne.output.stdoutLines
        try #require(printed.count == 2, "\(subscriberOne.describe())")
        #expect(printed[1].contains("\"payloadBase64\""), "the second payload should have been printed as base64")

        // Round 2: feed those lines back, between lines that must be skipped and counted.
        let input = [
            printed[0],
            #"{"name": "r.text", "payload": "a", "payloadBase64": "YQ=="}"#,
            #"{"name": "r.text", "payload": "a", "colour": "red"}"#,
            printed[1],
        ].joined(separator: "\n") + "\n"
        let subscriberTwo = try children.start(
            "subscriber 2", ["subscribe", "r.>", "--connect", second, "--count", "2", "--timeout", "30", "--format", "json"])
        let replay = try startWithInput(
            children, "replay", Array(input.utf8),
            ["publish", "r.default", "--lines", "--input", "json", "--bind", second, "--timeout", "30"])
        let replayed = await replay.waitForExit()
        expectExit(replayed, 2, replay)
        let stderr = replayed?.stderrText ?? ""
        #expect(stderr.contains("line 2: both 'payload' and 'payloadBase64'"), "\(replay.describe())")
        #expect(stderr.contains("line 3: unknown key 'colour'"), "\(replay.describe())")
        #expect(stderr.contains("posted 2, sent 2, unsent 0, skipped 2 "), "\(replay.describe())")

        #expect(await subscriberTwo.waitForStdoutLines(2), "\(subscriberTwo.describe())")
        expectExit(await awaitSubscriberExit(subscriberTwo), 0, subscriberTwo)
        let original = notificationObjects(printed)
        let copy = notificationObjects(subscriberTwo.output.stdoutLines)
        try #require(copy.count == 2, "\(subscriberTwo.describe())")
        for (a, b) in zip(original, copy) {
            #expect(a["name"] as? String == b["name"] as? String)
            #expect(payloadBytes(a) != nil && payloadBytes(a) == payloadBytes(b))
            #expect(a["headers"] as? [String: String] == b["headers"] as? [String: String])
            #expect(a["contentType"] as? String == b["contentType"] as? String)
        }
        // By name, or the code as text where it has none: what --content-type takes.
        #expect(copy.map { $0["contentType"] as? String } == ["json", "200"])
        #expect(copy.first?["headers"] as? [String: String] == ["k": "v"])
    }

    @Test("--input json keeps header keys byte for byte: 'é' precomposed and decomposed stay two keys, as on the wire")
    func canonicallyEquivalentHeaderKeysStayApart() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("keys.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "k.>", "--connect", endpoint, "--count", "1", "--timeout", "30", "--format", "json"])
        // The same key to Swift's String (canonically equivalent), two keys to NBP/1.
        let line = #"{"name": "k.n", "headers": {"é": "pre", "é": "de", "n": 1.50, "b": true}, "payload": "x"}"#
        let publisher = try startWithInput(
            children, "publisher", Array((line + "\n").utf8),
            ["publish", "k.default", "--lines", "--input", "json", "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        #expect(await subscriber.waitForStdoutLines(1), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let printed = Array((subscriber.output.stdoutLines.first ?? "").utf8)
        // Compared as bytes: String comparison would find the two keys equal.
        func contains(_ text: String) -> Bool {
            let needle = Array(text.utf8)
            return printed.count >= needle.count && (0...(printed.count - needle.count)).contains { printed[$0..<$0 + needle.count].elementsEqual(needle) }
        }
        #expect(contains("\"\u{00E9}\":\"pre\""), "\(subscriber.describe())")
        #expect(contains("\"e\u{0301}\":\"de\""), "\(subscriber.describe())")
        #expect(contains("\"n\":\"1.50\"") && contains("\"b\":\"true\""), "\(subscriber.describe())")
    }

    @Test("--input json sends an object or array payload as the line writes it: key order, spaces and '/' kept")
    func structuredPayloadPassesThrough() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("raw.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "raw.>", "--connect", endpoint, "--count", "2", "--timeout", "30", "--format", "json"])
        let object = #"{"z": 1, "a": {"path": "/orders", "n": 1.50}}"#
        let array = #"[3,1, "/x"]"#
        let lines = #"{"name": "raw.o", "payload": \#(object)}"# + "\n" + #"{"name": "raw.a", "payload":  \#(array) }"# + "\n"
        let publisher = try startWithInput(
            children, "publisher", Array(lines.utf8), ["publish", "raw.default", "--lines", "--input", "json", "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let (notifications, _) = parseJSONLines(subscriber.output.stdoutLines)
        #expect(notifications.map(\.payload) == [object, array], "\(subscriber.describe())")
    }

    @Test("--input json waits for subscribers of the first line's name, not of NAME")
    func jsonLinesWaitForWhatIsPublished() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("w.sock")
        let input = [
            #"{"name": "orders.shipped", "payload": "s-1"}"#,
            #"{"name": "orders.shipped", "payload": "s-2"}"#,
        ].joined(separator: "\n") + "\n"

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "orders.shipped", "--connect", endpoint, "--count", "2", "--timeout", "30", "--format", "json"])
        let publisher = try startWithInput(
            children, "publisher", Array(input.utf8),
            ["publish", "orders.created", "--lines", "--input", "json", "--bind", endpoint, "--timeout", "20"])
        let published = await publisher.waitForExit()
        expectExit(published, 0, publisher)
        #expect(published?.stderrText.contains("posted 2, sent 2, unsent 0") == true, "\(publisher.describe())")
        #expect(await subscriber.waitForStdoutLines(2), "\(subscriber.describe())")
        expectExit(await awaitSubscriberExit(subscriber), 0, subscriber)
        let received = parseJSONLines(subscriber.output.stdoutLines)
        #expect(received.notifications.map(\.payload) == ["s-1", "s-2"])
    }

    // MARK: Waiting

    @Test("--subscribers 2 with one there: the timeout says 1 of 2 arrived")
    func timeoutCountsArrivals() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start(
            "subscriber", ["subscribe", "c.x", "--connect", backend, "--count", "5", "--timeout", "30", "--format", "json"])
        // One notification through the broker proves the subscription is there; the broker's XSUB
        // hands it to every publisher that connects later.
        let first = try children.start(
            "first publisher", ["publish", "c.x", "one", "--connect", frontend, "--timeout", "30"])
        expectExit(await first.waitForExit(), 0, first)
        #expect(await subscriber.waitForStdoutLines(1), "\(subscriber.describe())")

        let second = try children.start(
            "second publisher", ["publish", "c.x", "two", "--connect", frontend, "--subscribers", "2", "--timeout", "2"])
        let output = await second.waitForExit()
        expectExit(output, 2, second)
        #expect(
            output?.stderrText.contains("1 of 2 subscribers for c.x reached this publisher within 2.0 s") == true,
            "\(second.describe())")
        _ = await stopSubscriber(subscriber)
    }

    // MARK: Arguments

    /// Arguments refused at once (exit 64), with what the message must say. No broker or
    /// subscriber exists and --timeout is long, so waiting first would be seen as a timeout.
    static let refusedArguments: [([String], String)] = [
        (["h.x", "--size", "2000000"], "--size 2000000 is over the maximum payload of 1048576"),
        (["h.x", "--header", "k=" + String(repeating: "v", count: 1_025)], "1025-byte value; the limit is 1024"),
        (["h.x"] + (1...33).flatMap { ["--header", "k\($0)=v"] }, "at most 32 headers are allowed, got 33"),
        (["h.x", "--header", "a=1", "--header", "a=2"], "--header a is given twice (a=1 and a=2)"),
        (["h.x", "--input", "json"], "--input only applies with --lines"),
        (["h.x", "payload", "--lines"], "a PAYLOAD argument is not used with --lines"),
        (["h.x", "--lines", "--count", "3"], "--count is not used with --lines"),
        (["h.x", "--subscribers", "2", "--no-wait"], "--subscribers is how many to wait for, but --no-wait does not wait"),
        (["h.x", "--timeout", "5", "--no-wait"], "--timeout is how long to wait for subscribers, but --no-wait"),
        // A negative count is a bad value, not a missing one (the parser took "-1" for an option).
        (["h.x", "--count", "-1"], "--count must be at least 1"),
    ]

    @Test("argument problems exit 64 at once, before connecting or waiting", arguments: refusedArguments)
    func refusedAtOnce(arguments: [String], message: String) async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("nobody.sock")
        var all = ["publish"] + arguments + ["--connect", endpoint]
        if !arguments.contains("--timeout") && !arguments.contains("--no-wait") { all += ["--timeout", "30"] }
        // Far below --timeout: a command that waits for subscribers first does not exit in time.
        let output = try await children.run("publish", all, timeout: .seconds(10))
        let text = output?.stderrText ?? ""
        #expect(output?.status == 64 && output?.bySignal == false, "exit \(output?.status ?? -1): \(text.prefix(300))")
        #expect(text.contains(message), "stderr: \(text.prefix(300))")
    }

    // MARK: CURVE

    @Test("--curve-secret given a .pub file: says it is a public key file, not to chmod it")
    func publicKeyFileAsSecret() async throws {
        let children = try Children()
        defer { children.killAll() }
        try FileManager.default.createDirectory(atPath: "\(children.folder.path)/pubs", withIntermediateDirectories: true)
        for name in ["broker", "pubs/orders"] {
            let output = try #require(try await children.run("keygen \(name)", ["keygen", "--output", name]))
            #expect(!output.bySignal && output.status == 0, "keygen \(name): \(output.stderrText)")
        }
        let endpoint = children.folder.ipc("curve.sock")
        for command in [["publish", "o.x"], ["subscribe", "o.x"]] {
            let output = try await children.run(
                command[0],
                command + ["--connect", endpoint, "--curve-secret", "pubs/orders.pub", "--curve-server-key", "broker.pub",
                           "--timeout", "30"],
                timeout: .seconds(10))
            let text = output?.stderrText ?? ""
            #expect(output?.status == 2, "\(command[0]): exit \(output?.status ?? -1): \(text)")
            #expect(
                text.contains(
                    "pubs/orders.pub is a public key file; --curve-secret needs the secret key file (probably pubs/orders.key"),
                "\(command[0]): \(text)")
            #expect(!text.contains("chmod"), "\(command[0]): \(text)")
        }
    }
}
