import Synchronization
import Tracing

/// A `Tracer` (swift-distributed-tracing) whose ended spans an `OTLPExporter` sends to an
/// OpenTelemetry collector over OTLP/HTTP: what `nbus --otlp-endpoint` bootstraps.
///
/// Spans get random 128-bit trace ids and 64-bit span ids; a span started under a context that
/// carries a span (the caller's, or one extracted from W3C `traceparent`/`tracestate` headers) is
/// its child, in the same trace, and inherits its trace flags and trace state. A span whose parent
/// is not sampled (trace flags bit 0 clear) is not recorded (OpenTelemetry's parent-based
/// sampling); every other span is.
public final class OTLPTracer: Tracer, Sendable {
    public typealias Span = OTLPSpan

    let exporter: OTLPExporter

    public init(exporter: OTLPExporter) {
        self.exporter = exporter
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> OTLPSpan {
        var context = context()
        let parent = context[OTLPSpanContextKey.self]
        let own = OTLPSpanContext(
            traceID: parent?.traceID ?? .random(), spanID: Self.randomSpanID(), traceFlags: parent?.traceFlags ?? 1,
            traceState: parent?.traceState ?? "", isRemote: false)
        context[OTLPSpanContextKey.self] = own
        return OTLPSpan(
            operationName: operationName, kind: kind, context: context, own: own, parent: parent,
            startTimeUnixNano: instant().nanosecondsSinceEpoch, exporter: own.isSampled ? exporter : nil)
    }

    /// Asks the exporter to send what is queued now, without waiting for it.
    public func forceFlush() {
        exporter.flushSoon()
    }

    public func inject<Carrier, Inject: Injector>(
        _ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject.Carrier == Carrier {
        guard let span = context[OTLPSpanContextKey.self] else { return }
        injector.inject(span.traceparent, forKey: "traceparent", into: &carrier)
        if !span.traceState.isEmpty { injector.inject(span.traceState, forKey: "tracestate", into: &carrier) }
    }

    /// Reads W3C `traceparent` (and `tracestate`): a malformed `traceparent` is ignored, as W3C
    /// Trace Context asks (the span then starts a trace of its own).
    public func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier),
            let remote = OTLPSpanContext(traceparent: header, traceState: extractor.extract(key: "tracestate", from: carrier))
        else { return }
        context[OTLPSpanContextKey.self] = remote
    }

    static func randomSpanID() -> UInt64 {
        while true {
            let id = OTLPRandom.next()
            if id != 0 { return id }
        }
    }
}

/// A span of `OTLPTracer`: queued for export when it ends (once).
public final class OTLPSpan: Tracing.Span, Sendable {
    /// Events and links kept per span; more are counted as dropped.
    static let maximumEvents = 128
    static let maximumLinks = 128

    private struct State {
        var operationName: String
        var attributes: SpanAttributes = [:]
        var status: OTLPSpanData.Status?
        var events: [OTLPSpanData.Event] = []
        var links: [OTLPSpanData.Link] = []
        var droppedEvents: UInt32 = 0
        var droppedLinks: UInt32 = 0
        var ended = false
    }

    public let context: InstrumentationContext
    public let kind: SpanKind
    /// This span's own ids.
    public let spanContext: OTLPSpanContext
    let parent: OTLPSpanContext?
    let startTimeUnixNano: UInt64
    /// Nil when the span is not recorded (its parent is not sampled).
    private let exporter: OTLPExporter?
    private let state: Mutex<State>

    init(
        operationName: String, kind: SpanKind, context: InstrumentationContext, own: OTLPSpanContext,
        parent: OTLPSpanContext?, startTimeUnixNano: UInt64, exporter: OTLPExporter?
    ) {
        self.kind = kind
        self.context = context
        self.spanContext = own
        self.parent = parent
        self.startTimeUnixNano = startTimeUnixNano
        self.exporter = exporter
        state = Mutex(State(operationName: operationName, ended: exporter == nil))
    }

    public var operationName: String {
        get { state.withLock { $0.operationName } }
        set { state.withLock { if !$0.ended { $0.operationName = newValue } } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { if !$0.ended { $0.attributes = newValue } } }
    }

    public var isRecording: Bool { state.withLock { !$0.ended } }

    public func setStatus(_ status: SpanStatus) {
        let code: OTLPSpanData.StatusCode = status.code == .ok ? .ok : .error
        state.withLock { state in
            guard !state.ended else { return }
            // OpenTelemetry: Ok is final; an error's description is kept.
            if state.status?.code == .ok { return }
            state.status = OTLPSpanData.Status(code: code, message: code == .error ? status.message ?? "" : "")
        }
    }

    public func addEvent(_ event: SpanEvent) {
        let converted = OTLPSpanData.Event(
            timeUnixNano: event.nanosecondsSinceEpoch, name: event.name, attributes: Self.convert(event.attributes))
        state.withLock { state in
            guard !state.ended else { return }
            if state.events.count < Self.maximumEvents { state.events.append(converted) } else { state.droppedEvents += 1 }
        }
    }

    /// An `exception` event (OpenTelemetry's convention: `exception.type`, `exception.message`);
    /// the status is the caller's to set.
    public func recordError<Instant: TracerInstant>(
        _ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        var all = [
            OTLPAttribute("exception.type", .string(String(reflecting: type(of: error)))),
            OTLPAttribute("exception.message", .string(String(describing: error))),
        ]
        all += Self.convert(attributes)
        let event = OTLPSpanData.Event(timeUnixNano: instant().nanosecondsSinceEpoch, name: "exception", attributes: all)
        state.withLock { state in
            guard !state.ended else { return }
            if state.events.count < Self.maximumEvents { state.events.append(event) } else { state.droppedEvents += 1 }
        }
    }

    /// A link to a span of this tracer (a context without one is ignored).
    public func addLink(_ link: SpanLink) {
        guard let linked = link.context[OTLPSpanContextKey.self] else { return }
        let converted = OTLPSpanData.Link(context: linked, attributes: Self.convert(link.attributes))
        state.withLock { state in
            guard !state.ended else { return }
            if state.links.count < Self.maximumLinks { state.links.append(converted) } else { state.droppedLinks += 1 }
        }
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        guard let exporter else { return }
        let end = instant().nanosecondsSinceEpoch
        let data: OTLPSpanData? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return OTLPSpanData(
                context: spanContext, parentSpanID: parent?.spanID, parentIsRemote: parent?.isRemote ?? false,
                name: state.operationName, kind: Self.kind(kind), startTimeUnixNano: startTimeUnixNano,
                endTimeUnixNano: max(end, startTimeUnixNano), attributes: Self.convert(state.attributes),
                events: state.events, links: state.links, status: state.status, droppedEvents: state.droppedEvents,
                droppedLinks: state.droppedLinks)
        }
        if let data { exporter.enqueue(data) }
    }

    static func kind(_ kind: SpanKind) -> OTLPSpanData.Kind {
        switch kind {
        case .server: .server
        case .client: .client
        case .producer: .producer
        case .consumer: .consumer
        case .internal: .internal
        }
    }

    static func convert(_ attributes: SpanAttributes) -> [OTLPAttribute] {
        var converted: [OTLPAttribute] = []
        attributes.forEach { key, value in converted.append(OTLPAttribute(key, Self.value(value))) }
        // Dictionary order varies from run to run: sorted, a span's bytes are the same each time.
        return converted.sorted { $0.key < $1.key }
    }

    static func value(_ attribute: SpanAttribute) -> OTLPAttribute.Value {
        switch attribute {
        case .int32(let number): .int(Int64(number))
        case .int64(let number): .int(number)
        case .int32Array(let numbers): .array(numbers.map { .int(Int64($0)) })
        case .int64Array(let numbers): .array(numbers.map { .int($0) })
        case .double(let number): .double(number)
        case .doubleArray(let numbers): .array(numbers.map { .double($0) })
        case .bool(let flag): .bool(flag)
        case .boolArray(let flags): .array(flags.map { .bool($0) })
        case .string(let text): .string(text)
        case .stringArray(let texts): .array(texts.map { .string($0) })
        case .stringConvertible(let value): .string(value.description)
        case .stringConvertibleArray(let values): .array(values.map { .string($0.description) })
        default: .string("\(attribute)")
        }
    }
}
