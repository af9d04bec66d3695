#if canImport(Glibc)
import Glibc
#endif
import OTLPTracing
import Testing
import Tracing

/// W3C Trace Context in and out of `OTLPTracer`, parent and child, and the exporter's bounds:
/// a full queue drops and counts, a receiver that is not there is counted and never blocks.
@Suite("OTLPTracer and OTLPExporter", .timeLimit(.minutes(1)))
struct OTLPTracerTests {
    /// A tcp port on 127.0.0.1 that refuses connections: bound, never listening, while `close` is not called.
    final class RefusingPort {
        let descriptor: Int32
        let port: UInt16

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            descriptor = fd
            port = UInt16(bigEndian: address.sin_port)
            try #require(bound && port != 0)
        }

        deinit { close(descriptor) }
    }

    struct HeaderCarrier: Injector, Extractor {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }

    static func exporter(port: UInt16, _ change: (inout OTLPExporter.Configuration) -> Void = { _ in }) throws -> OTLPExporter {
        var configuration = OTLPExporter.Configuration(
            endpoint: try OTLPEndpoint(parsing: "http://127.0.0.1:\(port)"), serviceName: "test")
        change(&configuration)
        return OTLPExporter(configuration)
    }

    @Test("traceparent: what W3C allows parses, the rest is refused")
    func traceparentParsing() throws {
        let parsed = try #require(
            OTLPSpanContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", traceState: "a=1"))
        #expect(parsed.traceID.hex == "0af7651916cd43dd8448eb211c80319c" && parsed.isSampled && parsed.isRemote)
        #expect(parsed.traceparent == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" && parsed.traceState == "a=1")
        // A later version may add fields.
        #expect(OTLPSpanContext(traceparent: "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-extra") != nil)
        for bad in [
            "", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more",
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
        ] {
            #expect(OTLPSpanContext(traceparent: bad) == nil, "\(bad)")
        }
    }

    @Test("--otlp-endpoint's URLs: http with host, port and path; https and the rest refused")
    func endpoints() throws {
        let plain = try OTLPEndpoint(parsing: "http://127.0.0.1:4318")
        #expect(plain.host == "127.0.0.1" && plain.port == 4318 && plain.path == "/v1/traces")
        let defaults = try OTLPEndpoint(parsing: "HTTP://collector/")
        #expect(defaults.host == "collector" && defaults.port == 4318 && defaults.path == "/v1/traces")
        let based = try OTLPEndpoint(parsing: "http://[::1]:9000/otel")
        #expect(based.host == "::1" && based.port == 9000 && based.path == "/otel/v1/traces")
        #expect(try OTLPEndpoint(parsing: "http://h:1/v1/traces").path == "/v1/traces")
        for bad in [
            "https://127.0.0.1:4318", "127.0.0.1:4318", "http://", "http://:4318", "http://h:0", "http://h:65536",
            "http://h:x", "http://h/a?b", "http://u@h", "http://h /x", "grpc://h:4317", "http://[::1",
        ] {
            #expect(throws: OTLPEndpoint.ParseError.self, "\(bad)") { try OTLPEndpoint(parsing: bad) }
        }
        #expect(throws: OTLPEndpoint.ParseError.self) { try OTLPEndpoint(parsing: "https://h") }
        do {
            _ = try OTLPEndpoint(parsing: "https://h")
        } catch {
            #expect(error.description.contains("https is not supported") && error.description.contains("Collector"))
        }
    }

    @Test("A child continues its parent's trace; inject writes traceparent/tracestate, extract reads them back")
    func propagation() throws {
        let refusing = try RefusingPort()
        let exporter = try Self.exporter(port: refusing.port)
        defer { exporter.shutdown(timeout: .seconds(5)) }
        let tracer = OTLPTracer(exporter: exporter)
        let root = tracer.startSpan("root", context: .topLevel, ofKind: .producer)
        let child = tracer.startSpan("child", context: root.context, ofKind: .internal)
        #expect(child.spanContext.traceID == root.spanContext.traceID && child.spanContext.spanID != root.spanContext.spanID)

        var headers: [String: String] = [:]
        tracer.inject(root.context, into: &headers, using: HeaderCarrier())
        #expect(headers["traceparent"] == root.spanContext.traceparent && headers["tracestate"] == nil)

        // A context from Python's SDK (or any W3C producer): the span continues it.
        let incoming = ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "vendor=x"]
        var context = InstrumentationContext.topLevel
        tracer.extract(incoming, into: &context, using: HeaderCarrier())
        let consumer = tracer.startSpan("receive", context: context, ofKind: .consumer)
        #expect(consumer.spanContext.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(consumer.spanContext.traceState == "vendor=x" && consumer.isRecording)
        var out: [String: String] = [:]
        tracer.inject(consumer.context, into: &out, using: HeaderCarrier())
        #expect(out["tracestate"] == "vendor=x" && out["traceparent"]?.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-") == true)

        // A parent that is not sampled: the child is not recorded (parent-based sampling).
        var unsampled = InstrumentationContext.topLevel
        tracer.extract(["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"], into: &unsampled, using: HeaderCarrier())
        #expect(!tracer.startSpan("quiet", context: unsampled, ofKind: .consumer).isRecording)
        // A malformed traceparent is ignored: a trace of its own.
        var malformed = InstrumentationContext.topLevel
        tracer.extract(["traceparent": "garbage"], into: &malformed, using: HeaderCarrier())
        #expect(malformed[OTLPSpanContextKey.self] == nil)
        for span in [root, child, consumer] { span.end() }
    }

    @Test("A full queue drops and counts; a receiver that refuses is counted, logged once, and shutdown is bounded")
    func boundsAndFailures() async throws {
        let refusing = try RefusingPort()
        // A batch only at shutdown (interval an hour, batches larger than the queue).
        let exporter = try Self.exporter(port: refusing.port) {
            $0.queueCapacity = 3
            $0.batchSize = 100
            $0.interval = .seconds(3_600)
        }
        let tracer = OTLPTracer(exporter: exporter)
        for index in 0..<5 {
            let span = tracer.startSpan("span \(index)", context: .topLevel, ofKind: .internal)
            span.attributes["index"] = index
            span.setStatus(SpanStatus(code: .error, message: "no"))
            span.recordError(TestError())
            span.end()
            span.end()  // once only
        }
        let clock = ContinuousClock()
        let started = clock.now
        let counts = exporter.shutdown(timeout: .seconds(10))
        #expect(clock.now - started < .seconds(10))
        #expect(counts.dropped == 2 && counts.failed == 3 && counts.failedExports == 1 && counts.exported == 0, "\(counts)")
        // After shutdown, spans are dropped (counted), never queued for a thread that is gone.
        tracer.startSpan("late", context: .topLevel, ofKind: .internal).end()
        #expect(exporter.counts.dropped == 3)
    }

    @Test("Shutdown that gives up during an export counts that batch as unsent: every span is accounted for")
    func shutdownDuringAnExport() async throws {
        // Listening, never accepting: the kernel takes the connection and the request, and no
        // answer ever comes, so the export is still under way when shutdown's timeout ends.
        let silent = try RefusingPort()
        try #require(listen(silent.descriptor, 8) == 0)
        let exporter = try Self.exporter(port: silent.port) {
            $0.batchSize = 100
            $0.interval = .seconds(3_600)
            $0.requestTimeout = .seconds(30)
        }
        let tracer = OTLPTracer(exporter: exporter)
        for index in 0..<3 { tracer.startSpan("span \(index)", context: .topLevel, ofKind: .internal).end() }
        let clock = ContinuousClock()
        let started = clock.now
        let counts = exporter.shutdown(timeout: .seconds(1))
        #expect(clock.now - started < .seconds(10))
        // Before, the batch taken off the queue was in no count: 0 exported, 0 failed, 0 unsent.
        // Which count holds it depends on who gives up first: shutdown (unsent) or the request,
        // whose timeout is cut to shutdown's (failed); never both, never neither.
        #expect(counts.exported == 0 && counts.dropped == 0, "\(counts)")
        #expect(counts.failed + counts.unsent == 3, "\(counts)")
    }

    struct TestError: Error {}
}
