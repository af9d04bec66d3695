import Synchronization
import TestSupport
import Tracing

/// A small but real tracer for the tracing tests: W3C Trace Context (`traceparent`,
/// `tracestate`) for propagation, random ids, and every ended span recorded in memory. What the
/// bus does with it is what it does with any bootstrapped tracer (swift-otel's among them).
final class RecordingTracer: Tracer, Sendable {
    typealias Span = RecordingSpan

    /// An ended span, as a test reads it.
    struct Finished: Sendable {
        var operationName: String
        var kind: SpanKind
        var traceID: String
        var spanID: String
        var parentSpanID: String?
        var attributes: [String: String]
        var isError: Bool
    }

    private let ended = Watched<[Finished]>([])
    /// What `tracestate` carries, to check that it crosses as well.
    let traceState: String

    init(traceState: String = "nbustest=1") {
        self.traceState = traceState
    }

    var finishedSpans: [Finished] { ended.value }

    func record(_ span: Finished) {
        ended.update { $0.append(span) }
    }

    /// The span named `name` once it ended, or nil when `timeout` passes first.
    func waitForSpan(_ name: String, timeout: Duration = standardWait) async -> Finished? {
        guard await ended.wait(timeout: timeout, until: { $0.contains { $0.operationName == name } }) else { return nil }
        return finishedSpans.first { $0.operationName == name }
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RecordingSpan {
        var context = context()
        let parent = context[W3CSpanContextKey.self]
        let own = W3CSpanContext(
            traceID: parent?.traceID ?? Self.randomHex(bytes: 16), spanID: Self.randomHex(bytes: 8))
        context[W3CSpanContextKey.self] = own
        return RecordingSpan(
            operationName: operationName, kind: kind, context: context, own: own, parentSpanID: parent?.spanID,
            tracer: self)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(
        _ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject.Carrier == Carrier {
        guard let span = context[W3CSpanContextKey.self] else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
        injector.inject(traceState, forKey: "tracestate", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier) else { return }
        let parts = header.split(separator: "-")
        guard parts.count == 4, parts[1].count == 32, parts[2].count == 16 else { return }
        context[W3CSpanContextKey.self] = W3CSpanContext(traceID: String(parts[1]), spanID: String(parts[2]))
    }

    static func randomHex(bytes: Int) -> String {
        (0..<bytes).map { _ in
            let byte = UInt8.random(in: 0...255)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}

/// The trace and span a context belongs to.
struct W3CSpanContext: Sendable, Hashable {
    var traceID: String
    var spanID: String
}

enum W3CSpanContextKey: InstrumentationContextKey {
    typealias Value = W3CSpanContext
}

/// A span of `RecordingTracer`: recorded in the tracer when it ends (once).
final class RecordingSpan: Tracing.Span, Sendable {
    private struct State {
        var operationName: String
        var attributes: SpanAttributes = [:]
        var isError = false
        var ended = false
    }

    let context: InstrumentationContext
    let kind: SpanKind
    let own: W3CSpanContext
    let parentSpanID: String?
    private let tracer: RecordingTracer
    private let state: Mutex<State>

    init(
        operationName: String, kind: SpanKind, context: InstrumentationContext, own: W3CSpanContext,
        parentSpanID: String?, tracer: RecordingTracer
    ) {
        self.kind = kind
        self.context = context
        self.own = own
        self.parentSpanID = parentSpanID
        self.tracer = tracer
        state = Mutex(State(operationName: operationName))
    }

    var operationName: String {
        get { state.withLock { $0.operationName } }
        set { state.withLock { $0.operationName = newValue } }
    }

    var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }

    var isRecording: Bool { state.withLock { !$0.ended } }

    func setStatus(_ status: SpanStatus) {
        if status.code == .error { state.withLock { $0.isError = true } }
    }

    func addEvent(_ event: SpanEvent) {}

    func recordError<Instant: TracerInstant>(
        _ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        state.withLock { $0.isError = true }
    }

    func addLink(_ link: SpanLink) {}

    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let finished: RecordingTracer.Finished? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            var attributes: [String: String] = [:]
            state.attributes.forEach { key, value in attributes[key] = Self.text(value) }
            return RecordingTracer.Finished(
                operationName: state.operationName, kind: kind, traceID: own.traceID, spanID: own.spanID,
                parentSpanID: parentSpanID, attributes: attributes, isError: state.isError)
        }
        if let finished { tracer.record(finished) }
    }

    private static func text(_ value: SpanAttribute) -> String {
        switch value {
        case .string(let text): return text
        case .int64(let number): return String(number)
        case .int32(let number): return String(number)
        case .bool(let flag): return String(flag)
        case .double(let number): return String(number)
        case .stringConvertible(let convertible): return convertible.description
        default: return "\(value)"
        }
    }
}
