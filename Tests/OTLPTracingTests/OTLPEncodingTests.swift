import Foundation
import OTLPTracing
import Testing
import ToolSupport

/// OTLPTracing's hand-written protobuf against the bytes the Python `opentelemetry-proto` package
/// writes for the same ExportTraceServiceRequest (Tests/OTLP/make_vectors.py prints them).
@Suite("OTLP protobuf encoding", .timeLimit(.minutes(1)))
struct OTLPEncodingTests {
    static let vectors: [String: String] = [
        "minimal": "0acc010a200a1e0a0c736572766963652e6e616d65120e0a0c6e6275732d7075626c69736812a7010a0d0a046e6275731205302e322e301295010a100102030405060708090a0b0c0d0e0f10120811121314151617182a1373656e64206f72646572732e6372656174656430043915cd853dfe9c971741f1d2853dfe9c97174a210a1b6d6573736167696e672e6d6573736167652e626f64792e73697a65120218024a250a106d6573736167696e672e73797374656d12110a0f6e6f74696669636174696f6e627573850101010000",
        "full": "0a8e030a220a200a0c736572766963652e6e616d6512100a0e6e6275732d73756273637269626512e7020a0d0a046e6275731205302e322e3012d5020a100102030405060708090a0b0c0d0e0f10120811121314151617181a0876656e646f723d31220821222324252627282a1672656365697665206f72646572732e6372656174656430053915cd853dfe9c9717419551a43dfe9c97174a0b0a05656d70747912020a004a0a0a04666c6167120210004a170a086e65676174697665120b18f9ffffffffffffffff014a120a05726174696f120921000000000000f83f4a130a046c697374120b2a090a030a01610a0218014a0f0a047465787412070a05c3a9e282ac5a4809fdd0853dfe9c97171209657863657074696f6e1a150a0e657863657074696f6e2e7479706512030a01451a1b0a11657863657074696f6e2e6d65737361676512060a04626f6f6d6a310a10a1a2a3a4a5a6a7a8a9aaabacadaeafb01208b1b2b3b4b5b6b7b8220e0a0377687912070a05626174636835010100007a081204626f6f6d1802850101030000",
        "two": "0aad010a150a130a0c736572766963652e6e616d6512030a01731293010a0d0a046e6275731205302e322e30123d0a100102030405060708090a0b0c0d0e0f10120811121314151617182a016130013901000000000000004102000000000000007a02180185010001000012430a100102030405060708090a0b0c0d0e0f1012082122232425262728220811121314151617182a01623003390300000000000000410300000000000000850101010000",
    ]

    static let trace = OTLPTraceID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
    static let span: UInt64 = 0x1112_1314_1516_1718
    static let parent: UInt64 = 0x2122_2324_2526_2728
    static let start: UInt64 = 1_700_000_000_123_456_789

    static func request(_ service: String, _ spans: [OTLPSpanData]) -> [UInt8] {
        OTLPEncoding.exportTraceServiceRequest(serviceName: service, scopeName: "nbus", scopeVersion: "0.2.0", spans: spans)
    }

    static let cases: [String: [UInt8]] = [
        "minimal": request(
            "nbus-publish",
            [
                OTLPSpanData(
                    context: OTLPSpanContext(traceID: trace, spanID: span), parentSpanID: nil, name: "send orders.created",
                    kind: .producer, startTimeUnixNano: start, endTimeUnixNano: start + 1_500,
                    attributes: [
                        OTLPAttribute("messaging.message.body.size", .int(2)),
                        OTLPAttribute("messaging.system", .string("notificationbus")),
                    ])
            ]),
        "full": request(
            "nbus-subscribe",
            [
                OTLPSpanData(
                    context: OTLPSpanContext(traceID: trace, spanID: span, traceState: "vendor=1"), parentSpanID: parent,
                    parentIsRemote: true, name: "receive orders.created", kind: .consumer, startTimeUnixNano: start,
                    endTimeUnixNano: start + 2_000_000,
                    attributes: [
                        OTLPAttribute("empty", .string("")), OTLPAttribute("flag", .bool(false)),
                        OTLPAttribute("negative", .int(-7)), OTLPAttribute("ratio", .double(1.5)),
                        OTLPAttribute("list", .array([.string("a"), .int(1)])), OTLPAttribute("text", .string("é€")),
                    ],
                    events: [
                        OTLPSpanData.Event(
                            timeUnixNano: start + 1_000, name: "exception",
                            attributes: [
                                OTLPAttribute("exception.type", .string("E")), OTLPAttribute("exception.message", .string("boom")),
                            ])
                    ],
                    links: [
                        OTLPSpanData.Link(
                            context: OTLPSpanContext(
                                traceID: OTLPTraceID(high: 0xa1a2_a3a4_a5a6_a7a8, low: 0xa9aa_abac_adae_afb0),
                                spanID: 0xb1b2_b3b4_b5b6_b7b8),
                            attributes: [OTLPAttribute("why", .string("batch"))])
                    ],
                    status: OTLPSpanData.Status(code: .error, message: "boom"))
            ]),
        "two": request(
            "s",
            [
                OTLPSpanData(
                    context: OTLPSpanContext(traceID: trace, spanID: span, traceFlags: 0), parentSpanID: nil, name: "a",
                    kind: .internal, startTimeUnixNano: 1, endTimeUnixNano: 2, status: OTLPSpanData.Status(code: .ok)),
                OTLPSpanData(
                    context: OTLPSpanContext(traceID: trace, spanID: parent), parentSpanID: span, name: "b", kind: .client,
                    startTimeUnixNano: 3, endTimeUnixNano: 3),
            ]),
    ]

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test("Each request is byte for byte what opentelemetry-proto (Python protobuf) writes", arguments: ["minimal", "full", "two"])
    func matchesPythonVectors(_ name: String) throws {
        let encoded = try #require(Self.cases[name])
        #expect(Self.hex(encoded) == Self.vectors[name])
    }

    @Test(
        "Each request parses with opentelemetry-proto and re-serializes to the same bytes",
        .enabled(if: otlpProtoPython, "needs python3 with opentelemetry-proto (make test-deps installs it as root)"))
    func pythonParsesWhatTheTracerMakes() throws {
        let spans = Self.cases.values.map { Self.hex($0) }
        for body in spans {
            let (status, output) = try SpawnedProcess.run("/usr/bin/env", ["python3", "-c", Self.reserialize], input: body)
            #expect(status == 0, "\(output)")
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == body)
        }
    }

    /// Reads a request in hex on stdin, parses it, writes it back in hex.
    static let reserialize = """
        import sys
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        request = ExportTraceServiceRequest.FromString(bytes.fromhex(sys.stdin.read().strip()))
        assert len(request.resource_spans[0].scope_spans[0].spans) >= 1
        print(request.SerializeToString().hex())
        """
}

/// Whether python3 imports opentelemetry-proto (the live checks are skipped otherwise).
let otlpProtoPython: Bool = {
    guard let probe = try? SpawnedProcess.run("/usr/bin/env", ["python3", "-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"]) else {
        return false
    }
    return probe.status == 0
}()
