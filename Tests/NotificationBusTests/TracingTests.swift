import Foundation
import Testing
import NotificationBus
import TestSupport
import Tracing

/// Issue 40, tracing across processes: W3C trace context in the headers, spans named and
/// attributed per OpenTelemetry's messaging conventions, nothing at all without a tracer. The
/// tracer is a real one (`RecordingTracer`), handed to each bus through `BusConfiguration.tracing`
/// so that this process never bootstraps one (the other tests here run without).
@Suite("Tracing across buses", .timeLimit(.minutes(1)))
struct TracingTests {
    static func brokered(_ broker: Broker, _ tracer: RecordingTracer) -> BusConfiguration {
        var configuration = BusConfiguration.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint)
        configuration.tracing = .tracer(tracer)
        return configuration
    }

    @Test("A post in a span carries its context bus -> broker -> bus over tcp; the receive span is its child")
    func contextCrossesBroker() async throws {
        let tracer = RecordingTracer()
        let broker = try Broker(BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*"))
        // One configuration each: a configuration carries its publisher id.
        let publisher = try Bus(Self.brokered(broker, tracer))
        let subscriber = try Bus(Self.brokered(broker, tracer))
        let orders = try subscriber.notifications(named: "orders.>")
        try await subscriber.ready("orders.>")

        try await tracer.withSpan("checkout") { _ in
            try await publisher.post(name: "orders.created", payload: Array("{}".utf8), headers: ["tenant": "7"])
        }
        // `first` leaves its loop after one: the iterator goes, and its open span ends.
        let received = try #require(await orders.first(1).first)

        let spans = tracer.finishedSpans
        let checkout = try #require(spans.first { $0.operationName == "checkout" })
        let send = try #require(spans.first { $0.operationName == "send orders.created" })
        let receive = try #require(spans.first { $0.operationName == "receive orders.created" })
        #expect(received.headers["traceparent"] == "00-\(checkout.traceID)-\(send.spanID)-01")
        #expect(received.headers["tracestate"] == "nbustest=1")
        #expect(received.headers["tenant"] == "7")
        #expect(send.kind == .producer && send.traceID == checkout.traceID && send.parentSpanID == checkout.spanID)
        #expect(receive.kind == .consumer && receive.traceID == checkout.traceID && receive.parentSpanID == send.spanID)
        #expect(send.attributes["messaging.system"] == "notificationbus")
        #expect(send.attributes["messaging.destination.name"] == "orders.created")
        #expect(send.attributes["messaging.operation.type"] == "send")
        #expect(send.attributes["messaging.message.body.size"] == "2")
        #expect(receive.attributes["messaging.system"] == "notificationbus")
        #expect(receive.attributes["messaging.destination.name"] == "orders.created")
        #expect(receive.attributes["messaging.operation.type"] == "receive")
        let publisherHex = String(publisher.publisherID, radix: 16)
        let paddedPublisher = String(repeating: "0", count: 16 - publisherHex.count) + publisherHex
        #expect(receive.attributes["messaging.message.id"] == "\(paddedPublisher)-1")
        #expect(receive.attributes["notificationbus.sequence"] == "1")
        _ = await publisher.close()
        _ = await subscriber.close()
        _ = await broker.stop()
    }

    @Test("An observer's block runs in a process span: what it posts continues the trace")
    func observerProcessSpanIsCurrent() async throws {
        let tracer = RecordingTracer()
        var configuration = BusConfiguration.embedded()
        configuration.tracing = .tracer(tracer)
        let bus = try Bus(configuration)
        let audits = try bus.notifications(named: "audit.>")
        let token = try bus.addObserver(forName: "orders.>") { notification in
            try? await bus.post(name: "audit.seen", headers: ["of": notification.name.rawValue])
        }
        try await bus.ready("orders.>")
        try await bus.ready("audit.>")
        try await tracer.withSpan("checkout") { _ in try await bus.post(name: "orders.created") }
        let audit = try #require(await audits.first(1).first)
        token.cancel()

        let spans = tracer.finishedSpans
        let checkout = try #require(spans.first { $0.operationName == "checkout" })
        let process = try #require(await tracer.waitForSpan("process orders.created"))
        let auditSend = try #require(spans.first { $0.operationName == "send audit.seen" })
        #expect(process.kind == .consumer && process.traceID == checkout.traceID)
        #expect(process.attributes["messaging.operation.type"] == "process")
        #expect(auditSend.traceID == checkout.traceID && auditSend.parentSpanID == process.spanID)
        #expect(audit.headers["traceparent"] == "00-\(checkout.traceID)-\(auditSend.spanID)-01")
        // The observer's own loop makes no receive span: only the process span stands for it.
        #expect(!spans.contains { $0.operationName == "receive orders.created" })
        _ = await bus.close()
    }

    @Test("Typed messages: a post in a span reaches a typed observer and a typed sequence in the same trace")
    func typedMessagesAreTraced() async throws {
        let tracer = RecordingTracer()
        let broker = try Broker(BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*"))
        // One configuration each: a configuration carries its publisher id.
        let publisher = try Bus(Self.brokered(broker, tracer))
        let subscriber = try Bus(Self.brokered(broker, tracer))
        let observed = Gate()
        let token = try subscriber.addObserver(for: TypedOrderCreated.self) { _ in observed.fire() }
        let orders = try subscriber.messages(of: TypedOrderCreated.self)
        try await subscriber.ready(orders.pattern)
        try await publisher.waitForSubscribers(count: 1, matching: TypedOrderCreated.busName)
        let order = TypedOrderCreated(id: 1, total: 2, customer: "c", items: [], express: nil)
        try await tracer.withSpan("checkout") { _ in try await publisher.post(order) }
        #expect(await orders.first(1) == [order])
        await observed.wait()
        token.cancel()

        let spans = tracer.finishedSpans
        let checkout = try #require(spans.first { $0.operationName == "checkout" })
        let send = try #require(spans.first { $0.operationName == "send typed.orders.created" })
        #expect(send.parentSpanID == checkout.spanID)
        let receive = try #require(spans.first { $0.operationName == "receive typed.orders.created" })
        #expect(receive.traceID == checkout.traceID && receive.parentSpanID == send.spanID)
        // The observer's span ends after its block returns: wait for it, bounded.
        let process = await tracer.waitForSpan("process typed.orders.created")
        #expect(process?.traceID == checkout.traceID && process?.parentSpanID == send.spanID)
        _ = await publisher.close()
        _ = await subscriber.close()
        _ = await broker.stop()
    }

    @Test("A post whose headers leave no room for the context (32 entries) still goes, untraced on the wire")
    func fullHeadersStillPost() async throws {
        let tracer = RecordingTracer()
        var configuration = BusConfiguration.embedded()
        configuration.tracing = .tracer(tracer)
        let bus = try Bus(configuration)
        let stream = try bus.notifications(named: "orders.>")
        try await bus.ready("orders.>")
        let full = NotificationHeaders((0..<32).map { ("k\($0)", "v") })
        try await tracer.withSpan("checkout") { _ in
            try await bus.post(name: "orders.created", headers: full)
        }
        let received = try #require(await stream.first(1).first)
        #expect(received.headers.count == 32 && received.headers["traceparent"] == nil)
        _ = await bus.close()
    }

    @Test("Headers that carry a traceparent already keep it, and the post makes no span of its own")
    func userTraceparentIsKept() async throws {
        let tracer = RecordingTracer()
        var configuration = BusConfiguration.embedded()
        configuration.tracing = .tracer(tracer)
        let bus = try Bus(configuration)
        let stream = try bus.notifications(named: "orders.>")
        try await bus.ready("orders.>")
        let foreign = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        try await tracer.withSpan("checkout") { _ in
            try await bus.post(name: "orders.created", headers: ["traceparent": foreign, "tracestate": "vendor=x"])
        }
        let received = try #require(await stream.first(1).first)
        #expect(received.headers["traceparent"] == foreign && received.headers["tracestate"] == "vendor=x")
        let spans = tracer.finishedSpans
        #expect(!spans.contains { $0.operationName.hasPrefix("send") })
        let receive = try #require(spans.first { $0.operationName == "receive orders.created" })
        #expect(receive.traceID == "0af7651916cd43dd8448eb211c80319c" && receive.parentSpanID == "b7ad6b7169203331")
        _ = await bus.close()
    }

    @Test(
        "No tracer bootstrapped (or tracing off, or a NoOpTracer): no trace headers, over tcp",
        arguments: ["bootstrapped", "off", "noop"])
    func noTracerNoHeaders(_ mode: String) async throws {
        // This test process never bootstraps the InstrumentationSystem.
        #expect(InstrumentationSystem.tracer is NoOpTracer)
        let tracing: BusTracing =
            switch mode {
            case "off": .off
            case "noop": .tracer(NoOpTracer())
            default: .bootstrapped
            }
        var publisherConfiguration = BusConfiguration.directPublisher(bind: "tcp://127.0.0.1:*")
        publisherConfiguration.tracing = tracing
        let publisher = try Bus(publisherConfiguration)
        var subscriberConfiguration = BusConfiguration.directSubscriber(connect: publisher.endpoints)
        subscriberConfiguration.tracing = tracing
        let subscriber = try Bus(subscriberConfiguration)
        let stream = try subscriber.notifications(named: "orders.>")
        try await subscriber.ready("orders.>")
        try await publisher.post(name: "orders.created", headers: ["tenant": "7"])
        let received = try #require(await stream.first(1).first)
        #expect(Array(received.headers).map(\.key) == ["tenant"])
        _ = await publisher.close()
        _ = await subscriber.close()
    }
}

/// A python3 with pyzmq and opentelemetry-sdk, or nil (the test is then skipped, saying so).
private let tracingPython: Bool = {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["python3", "-c", "import zmq, opentelemetry.sdk.trace"]
    probe.standardOutput = FileHandle.nullDevice
    probe.standardError = FileHandle.nullDevice
    guard (try? probe.run()) != nil else { return false }
    probe.waitUntilExit()
    return probe.terminationStatus == 0
}()

@Suite("A trace that starts in Python ends in a Swift subscriber", .timeLimit(.minutes(1)))
struct PythonTraceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(
        "examples/python/producer.py --trace (opentelemetry-sdk) -> broker over tcp -> a Swift bus: the receive span continues the Python span",
        .enabled(if: tracingPython, "needs python3 with pyzmq and opentelemetry-sdk (make test-deps installs them as root)"))
    func pythonProducerStartsTheTrace() async throws {
        let tracer = RecordingTracer()
        let broker = try Broker(BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*"))
        var configuration = BusConfiguration.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint)
        configuration.tracing = .tracer(tracer)
        let subscriber = try Bus(configuration)
        let orders = try subscriber.notifications(named: "orders.created")
        // The producer waits (XPUB) until this subscription reaches it through the broker.
        let producer = Process()
        producer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        producer.arguments = [
            "python3", Self.root.appendingPathComponent("examples/python/producer.py").path, "orders.created", #"{"id":1}"#,
            "--content-type", "json", "--connect", broker.frontendEndpoint, "--trace", "--timeout", "30",
        ]
        let output = Pipe()
        producer.standardOutput = output
        try producer.run()
        let received = try #require(await orders.first(1).first)
        let printed = try await runBlocking {
            let data = output.fileHandleForReading.readDataToEndOfFile()
            producer.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(producer.terminationStatus == 0)
        let words = printed.split(whereSeparator: \.isWhitespace).map(String.init)
        try #require(words.count == 3 && words[0] == "trace", "producer printed \(printed)")
        let (traceID, spanID) = (words[1], words[2])
        #expect(received.headers["traceparent"]?.hasPrefix("00-\(traceID)-\(spanID)-") == true, "\(received.headers)")
        let receive = try #require(tracer.finishedSpans.first { $0.operationName == "receive orders.created" })
        #expect(receive.traceID == traceID && receive.parentSpanID == spanID && receive.kind == .consumer)
        _ = await subscriber.close()
        _ = await broker.stop()
    }
}
