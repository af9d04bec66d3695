import Foundation
import TestSupport
import Testing
import ToolSupport

// Issue 40: `nbus ... --otlp-endpoint` exports its spans over OTLP/HTTP to a real receiver,
// examples/python/otlp_receiver.py, which parses each body with the `opentelemetry-proto` package
// and prints every span as a JSON line. Real processes throughout: receiver, broker, publisher
// (nbus or examples/python/producer.py --trace) and subscriber.

/// Whether python3 imports opentelemetry-proto (the receiver); the tests that need it skip otherwise.
private let receiverPython: Bool = {
    guard let probe = try? SpawnedProcess.run("/usr/bin/env", ["python3", "-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"]) else {
        return false
    }
    return probe.status == 0
}()

/// Whether the nbus under test exports through swift-otel (built with the SwiftOTel trait; `make
/// test-swift-otel` runs this suite on such a build): its `--help` says which exporter it has.
/// swift-otel names its own instrumentation scope, sets no span flags and logs a failed export in
/// its own words; the rest (spans, trace, attributes, the counts at the end) must be the same.
private let swiftOTel: Bool = {
    guard let nbus = try? NBusBinary.url(), let help = try? SpawnedProcess.run(nbus.path, ["publish", "--help"]) else { return false }
    // Folded to the terminal's width: compared with the line breaks taken out.
    return help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("Exporter: swift-otel")
}()

/// And pyzmq with opentelemetry-sdk, for examples/python/producer.py --trace.
private let producerPython: Bool = {
    guard let probe = try? SpawnedProcess.run("/usr/bin/env", ["python3", "-c", "import zmq, opentelemetry.sdk.trace"]) else { return false }
    return probe.status == 0
}()

@Suite("nbus --otlp-endpoint against a real OTLP receiver", .timeLimit(.minutes(2)))
struct OTLPExportTests {
    static func script(_ name: String) -> String {
        DocSnippetTests.root.appendingPathComponent("examples/python/\(name)").path
    }

    /// Starts the receiver on a free port; returns it and its base URL.
    static func startReceiver(_ children: Children, sourceLocation: SourceLocation = #_sourceLocation) async throws -> (Child, String) {
        let receiver = try children.start(
            "otlp_receiver", command: URL(fileURLWithPath: "/usr/bin/env"), ["python3", script("otlp_receiver.py"), "--port", "0"])
        let line = try #require(await receiver.waitForStdoutLine(containing: "listening "), "\(receiver.describe())", sourceLocation: sourceLocation)
        let port = try #require(Int(line.dropFirst("listening ".count)), sourceLocation: sourceLocation)
        return (receiver, "http://127.0.0.1:\(port)")
    }

    /// The spans the receiver printed so far, as JSON objects.
    static func spans(_ receiver: Child) -> [[String: Any]] {
        receiver.output.stdoutLines.dropFirst().compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Waits until the receiver printed a span named `name`; returns it.
    static func waitForSpan(_ name: String, in receiver: Child) async -> [String: Any]? {
        _ = await receiver.wait(timeout: standardWait) { output in
            output.stdoutTailLines(bytes: 1 << 20).contains { $0.contains("\"name\": \"\(name)\"") } || output.stdoutClosed
        }
        return spans(receiver).first { $0["name"] as? String == name }
    }

    @Test(
        "nbus publish -> nbus broker -> nbus subscribe, both --otlp-endpoint: one trace, send the receive span's parent",
        .enabled(if: receiverPython, "needs python3 with opentelemetry-proto (make test-deps installs it as root)"))
    func publishToSubscribe() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (receiver, url) = try await Self.startReceiver(children)
        let (_, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start(
            "subscribe",
            ["subscribe", "orders.created", "--connect", backend, "--count", "1", "--timeout", "60", "--format", "json", "--otlp-endpoint", url])
        let publisher = try children.start(
            "publish",
            [
                "publish", "orders.created", #"{"id":1}"#, "--content-type", "json", "--connect", frontend, "--timeout", "60",
                "--otlp-endpoint", url, "--otlp-service-name", "checkout-cli",
            ])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(), 0, subscriber)

        let send = try #require(await Self.waitForSpan("send orders.created", in: receiver), "\(receiver.describe())")
        let receive = try #require(await Self.waitForSpan("receive orders.created", in: receiver), "\(receiver.describe())")
        #expect(send["service"] as? String == "checkout-cli" && receive["service"] as? String == "nbus-subscribe")
        #expect(send["scope"] as? String == (swiftOTel ? "swift-otel" : "nbus"))
        #expect(send["kind"] as? String == "PRODUCER" && receive["kind"] as? String == "CONSUMER")
        let traceID = try #require(send["traceId"] as? String)
        #expect(traceID.count == 32 && (send["spanId"] as? String)?.count == 16)
        #expect(send["parentSpanId"] as? String == "")
        #expect(receive["traceId"] as? String == traceID)
        #expect(receive["parentSpanId"] as? String == send["spanId"] as? String)
        // OTLP's span flags: sampled, and (bits 8, 9) the receive span's parent is remote. swift-otel
        // (1.6) leaves the field unset.
        if !swiftOTel { #expect(receive["flags"] as? Int == 0x301 && send["flags"] as? Int == 0x101) }
        for span in [send, receive] {
            let start = try #require(span["startTimeUnixNano"] as? Int)
            let end = try #require(span["endTimeUnixNano"] as? Int)
            #expect(start > 1_600_000_000 * 1_000_000_000 && end >= start)
        }
        let sendAttributes = try #require(send["attributes"] as? [String: Any])
        #expect(sendAttributes["messaging.system"] as? String == "notificationbus")
        #expect(sendAttributes["messaging.destination.name"] as? String == "orders.created")
        #expect(sendAttributes["messaging.operation.type"] as? String == "send")
        #expect(sendAttributes["messaging.message.body.size"] as? Int == 8)
        let receiveAttributes = try #require(receive["attributes"] as? [String: Any])
        #expect(receiveAttributes["messaging.system"] as? String == "notificationbus")
        #expect(receiveAttributes["messaging.destination.name"] as? String == "orders.created")
        #expect(receiveAttributes["messaging.operation.type"] as? String == "receive")
        #expect(receiveAttributes["notificationbus.sequence"] as? Int == 1)
        #expect((receiveAttributes["messaging.message.id"] as? String)?.hasSuffix("-1") == true)
        #expect(Self.spans(receiver).count == 2, "\(receiver.output.stdoutText)")
        // The context the publisher sent is the send span's.
        let received = try #require(parseJSONLines(subscriber.output.stdoutLines).notifications.first, "\(subscriber.describe())")
        #expect(received.headers["traceparent"] == "00-\(traceID)-\(send["spanId"] as? String ?? "")-01", "\(received.headers)")
    }

    @Test(
        "nbus request -> nbus reply, both --otlp-endpoint: request, its receipt, the reply and its receipt make one trace",
        .enabled(if: receiverPython, "needs python3 with opentelemetry-proto (make test-deps installs it as root)"))
    func requestReplyIsOneTrace() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (receiver, url) = try await Self.startReceiver(children)
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend", frontend, "--backend", backend, "--otlp-endpoint", url]
        let responder = try children.start("reply", ["reply", "math.*", "--echo", "--count", "1"] + endpoints)
        try #require(await responder.waitForStderr(containing: "answering"), "\(responder.describe())")
        let request = try children.start("request", ["request", "math.double", "21"] + endpoints)
        expectExit(await request.waitForExit(), 0, request)
        expectExit(await responder.waitForExit(), 0, responder)
        let sent = try #require(await Self.waitForSpan("send math.double", in: receiver), "\(receiver.describe())")
        let taken = try #require(await Self.waitForSpan("receive math.double", in: receiver), "\(receiver.describe())")
        _ = await receiver.wait(timeout: standardWait) { $0.completeStdoutLineCount >= 5 || $0.stdoutClosed }
        let spans = Self.spans(receiver)
        let replySend = try #require(spans.first { ($0["name"] as? String)?.hasPrefix("send _inbox.") == true }, "\(spans)")
        let replyReceive = try #require(spans.first { ($0["name"] as? String)?.hasPrefix("receive _inbox.") == true }, "\(spans)")
        #expect(sent["service"] as? String == "nbus-request" && taken["service"] as? String == "nbus-reply")
        #expect(replySend["service"] as? String == "nbus-reply" && replyReceive["service"] as? String == "nbus-request")
        #expect(Set(spans.map { $0["traceId"] as? String ?? "" }).count == 1, "\(spans)")
        #expect(taken["parentSpanId"] as? String == sent["spanId"] as? String)
        #expect(replySend["parentSpanId"] as? String == sent["spanId"] as? String)
        #expect(replyReceive["parentSpanId"] as? String == replySend["spanId"] as? String)
    }

    @Test("Without --otlp-endpoint no tracer is bootstrapped: nbus publish adds no trace context")
    func noEndpointNoTracing() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start(
            "subscribe", ["subscribe", "orders.created", "--connect", backend, "--count", "1", "--timeout", "60", "--format", "json"])
        let publisher = try children.start("publish", ["publish", "orders.created", "x", "--connect", frontend, "--timeout", "60"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
        let received = try #require(parseJSONLines(subscriber.output.stdoutLines).notifications.first, "\(subscriber.describe())")
        #expect(received.headers.isEmpty, "\(received.headers)")
    }

    @Test(
        "examples/python/producer.py --trace -> nbus broker -> nbus subscribe --otlp-endpoint: the Python span is the parent",
        .enabled(if: receiverPython && producerPython, "needs python3 with pyzmq, opentelemetry-sdk and opentelemetry-proto"))
    func pythonProducerToSubscribe() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (receiver, url) = try await Self.startReceiver(children)
        let (_, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start(
            "subscribe", ["subscribe", "orders.created", "--connect", backend, "--count", "1", "--timeout", "60", "--otlp-endpoint", url])
        // The producer waits (XPUB) until the subscription reaches it through the broker.
        let producer = try children.start(
            "producer", command: URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", Self.script("producer.py"), "orders.created", #"{"id":1}"#, "--content-type", "json", "--connect",
                frontend, "--trace", "--timeout", "60",
            ])
        expectExit(await producer.waitForExit(timeout: .seconds(90)), 0, producer)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
        let words = try #require(producer.output.stdoutLines.first { $0.hasPrefix("trace ") }, "\(producer.describe())")
            .split(separator: " ").map(String.init)
        try #require(words.count == 3)
        let receive = try #require(await Self.waitForSpan("receive orders.created", in: receiver), "\(receiver.describe())")
        #expect(receive["traceId"] as? String == words[1])
        #expect(receive["parentSpanId"] as? String == words[2])
        #expect(receive["service"] as? String == "nbus-subscribe" && receive["kind"] as? String == "CONSUMER")
    }

    @Test(
        "A receiver that answers 404: logged once and counted, the command's own outcome untouched",
        .enabled(if: receiverPython, "needs python3 with opentelemetry-proto (make test-deps installs it as root)"))
    func failedExportIsCounted() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (receiver, url) = try await Self.startReceiver(children)
        let (_, frontend, _) = try await children.startBroker()
        let publish = ["publish", "orders.created", "x", "--count", "3", "--no-wait", "--connect", frontend]
        let plain = try #require(await children.run("publish", publish))
        // `/elsewhere/v1/traces`: the receiver answers 404.
        let output = try #require(await children.run("publish", publish + ["--otlp-endpoint", url + "/elsewhere"]))
        #expect(output.status == plain.status && !output.bySignal, "\(output.stderrText)")
        let stderr = output.stderrText
        // Logged once, in the exporter's words (swift-otel's or the built-in one's), then counted.
        let (failure, why) = swiftOTel ? ("Failed to export batch", "404 Not Found") : ("OTLP export to", "HTTP status 404")
        #expect(stderr.components(separatedBy: failure).count == 2, "\(stderr)")
        #expect(stderr.contains(why) && stderr.contains("3 lost"), "\(stderr)")
        #expect(Self.spans(receiver).isEmpty)
    }

    @Test("No receiver listening: the command ends as it would without --otlp-endpoint, within the flush bound")
    func nobodyListening() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start(
            "subscribe", ["subscribe", "orders.created", "--connect", backend, "--count", "1", "--timeout", "60", "--otlp-endpoint", "http://127.0.0.1:1"])
        let publisher = try children.start(
            "publish", ["publish", "orders.created", "x", "--connect", frontend, "--timeout", "60", "--otlp-endpoint", "http://127.0.0.1:1"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
        #expect(subscriber.output.stdoutText.contains("orders.created"))
        let failure = swiftOTel ? "Failed to export batch" : "OTLP export to http://127.0.0.1:1/v1/traces failed"
        #expect(subscriber.output.stderrText.contains(failure), "\(subscriber.describe())")
        // The exporter's last words ("OTLP: 0 span(s) exported ..., N lost") come before the
        // summary, the last line (they followed it while the exporter ended at the command's exit).
        for (child, summary) in [(subscriber, "nbus subscribe: printed 1;"), (publisher, "nbus publish: posted 1,")] {
            let lines = child.output.stderrText.split(separator: "\n")
            #expect(lines.contains { $0.contains("OTLP: 0 span(s) exported") }, "\(child.describe())")
            #expect(lines.last?.hasPrefix(summary) == true, "\(child.describe())")
        }
    }

    @Test("--otlp-endpoint and --otlp-service-name: bad values are usage errors (64); --help shows them")
    func usage() async throws {
        let children = try Children()
        defer { children.killAll() }
        for (arguments, says) in [
            (["subscribe", "a", "--otlp-endpoint", "https://collector:4318"], "https is not supported"),
            (["publish", "a", "--otlp-endpoint", "collector:4318"], "is not an http:// URL"),
            (["request", "a", "--otlp-endpoint", "http://h:99999"], "the port must be 1 to 65535"),
            (["reply", "a", "--echo", "--otlp-service-name", "x"], "give --otlp-endpoint too"),
        ] {
            let output = try #require(await children.run("usage", arguments))
            #expect(output.status == 64, "\(arguments): \(output.stderrText)")
            #expect(output.stderrText.contains(says), "\(arguments): \(output.stderrText)")
        }
        for command in ["publish", "subscribe", "request", "reply"] {
            let output = try #require(await children.run("help", [command, "--help"]))
            #expect(output.stdoutText.contains("--otlp-endpoint") && output.stdoutText.contains("--otlp-service-name"), "\(command)")
        }
    }

    /// docs/tracing.md's block after `<!-- test: otlp-export -->`, split into lines of shell words
    /// (single quotes only, as the block writes them) with `&` at the end dropped.
    static func documentedCommands() throws -> [[String]] {
        let text = try String(contentsOf: DocSnippetTests.root.appendingPathComponent("docs/tracing.md"), encoding: .utf8)
        let marker = try #require(text.range(of: "<!-- test: otlp-export -->"))
        let open = try #require(text.range(of: "```sh\n", range: marker.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "\n```", range: open.upperBound..<text.endIndex))
        return text[open.upperBound..<close.lowerBound].split(separator: "\n").map { line in
            var words: [String] = []
            var word = ""
            var quoted = false
            var started = false
            for character in line {
                if character == "'" {
                    quoted.toggle()
                    started = true
                } else if character == " " && !quoted {
                    if started { words.append(word) }
                    (word, started) = ("", false)
                } else {
                    word.append(character)
                    started = true
                }
            }
            if started { words.append(word) }
            if words.last == "&" { words.removeLast() }
            return words
        }
    }

    @Test(
        "docs/tracing.md's --otlp-endpoint block runs as written (ports changed, the broker's endpoints given)",
        .enabled(if: receiverPython, "needs python3 with opentelemetry-proto (make test-deps installs it as root)"))
    func documentedSnippet() async throws {
        let commands = try Self.documentedCommands()
        try #require(commands.count == 4)
        try #require(commands[0].starts(with: ["python3", "examples/python/otlp_receiver.py", "--port", "4318"]))
        try #require(commands[1] == ["nbus", "broker"] && commands[2].first == "nbus" && commands[3].first == "nbus")
        let children = try Children()
        defer { children.killAll() }
        let receiver = try children.start(
            "otlp_receiver", command: URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", DocSnippetTests.root.appendingPathComponent(commands[0][1]).path, "--port", "0"] + commands[0].dropFirst(4))
        let line = try #require(await receiver.waitForStdoutLine(containing: "listening "), "\(receiver.describe())")
        let port = try #require(Int(line.dropFirst("listening ".count)))
        let (_, frontend, backend) = try await children.startBroker()
        func localised(_ words: [String]) -> [String] {
            words.dropFirst().map { $0.replacingOccurrences(of: "127.0.0.1:4318", with: "127.0.0.1:\(port)") }
        }
        let subscriber = try children.start("subscribe", localised(commands[2]) + ["--connect", backend])
        let publisher = try children.start("publish", localised(commands[3]) + ["--connect", frontend])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
        let send = try #require(await Self.waitForSpan("send orders.created", in: receiver), "\(receiver.describe())")
        let receive = try #require(await Self.waitForSpan("receive orders.created", in: receiver), "\(receiver.describe())")
        #expect(send["kind"] as? String == "PRODUCER" && send["service"] as? String == "nbus-publish")
        #expect(receive["kind"] as? String == "CONSUMER" && receive["service"] as? String == "nbus-subscribe")
        #expect(receive["traceId"] as? String == send["traceId"] as? String)
        #expect(receive["parentSpanId"] as? String == send["spanId"] as? String)
    }
}
