import NBP1
import Tracing

/// Where a bus takes the tracer for its spans and trace headers (issue 40: tracing across
/// processes). Read once, when the bus opens.
///
/// With a tracer, a post runs in a producer span (`send <name>`) whose context the tracer injects
/// into the notification's headers (W3C Trace Context: `traceparent`, `tracestate`), unless the
/// headers already carry a `traceparent`; a delivery runs in a consumer span that is a child of
/// the context the tracer extracts from the headers (`receive <name>` for a `for await` loop,
/// `process <name>` around an observer's block). Without one (nothing bootstrapped: a
/// `NoOpTracer`), a bus does no tracing work at all: no span, no header, no task-local read.
public enum BusTracing: Sendable {
    /// `InstrumentationSystem.tracer` as it is when the bus opens: bootstrap the tracer first.
    case bootstrapped
    /// No spans and no trace headers, whatever is bootstrapped.
    case off
    /// This tracer, whatever is bootstrapped.
    case tracer(any Tracer)
}

/// OpenTelemetry's messaging attribute names, as the semantic conventions spell them.
enum MessagingAttribute {
    static let system = "messaging.system"
    static let destinationName = "messaging.destination.name"
    static let operationType = "messaging.operation.type"
    static let operationName = "messaging.operation.name"
    static let messageID = "messaging.message.id"
    static let bodySize = "messaging.message.body.size"
    static let sequence = "notificationbus.sequence"
    static let publisherID = "notificationbus.publisher_id"
    /// `messaging.system`'s value for this bus.
    static let systemName = "notificationbus"
}

/// Notification headers as a tracer's carrier: keys and values as they are.
struct NotificationHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout NotificationHeaders) {
        carrier[key] = value
    }
}

/// Reads a tracer's keys from notification headers.
struct NotificationHeadersExtractor: Extractor {
    func extract(key: String, from carrier: NotificationHeaders) -> String? {
        carrier[key]
    }
}

/// A bus's tracer, when it has one that records (never a `NoOpTracer`): the bus holds nil
/// otherwise and skips every tracing step with one nil check.
@usableFromInline
final class BusTracer: Sendable {
    /// W3C Trace Context's header: a post whose headers carry it already keeps it as it is.
    static let traceparent = "traceparent"

    let tracer: any Tracer

    private init(_ tracer: any Tracer) {
        self.tracer = tracer
    }

    /// The tracer `tracing` names, or nil when it is off or a `NoOpTracer` (the default when
    /// nothing was bootstrapped).
    static func resolve(_ tracing: BusTracing) -> BusTracer? {
        let tracer: any Tracer
        switch tracing {
        case .off: return nil
        case .bootstrapped: tracer = InstrumentationSystem.tracer
        case .tracer(let chosen): tracer = chosen
        }
        return tracer is NoOpTracer ? nil : BusTracer(tracer)
    }

    /// Starts `send <name>` (kind producer) under the caller's current context, and injects its
    /// context into `headers`; nil (headers untouched) when they carry a `traceparent` already.
    func startSend(_ name: NotificationName, payloadCount: Int?, headers: inout NotificationHeaders) -> (any Span)? {
        guard headers[Self.traceparent] == nil else { return nil }
        let destination = name.rawValue
        let span = tracer.startSpan(
            "send " + destination, context: InstrumentationContext.current ?? .topLevel, ofKind: .producer)
        span.updateAttributes { attributes in
            attributes[MessagingAttribute.system] = MessagingAttribute.systemName
            attributes[MessagingAttribute.destinationName] = destination
            attributes[MessagingAttribute.operationType] = "send"
            attributes[MessagingAttribute.operationName] = "post"
            if let payloadCount { attributes[MessagingAttribute.bodySize] = payloadCount }
        }
        // Into a copy: a post whose own headers leave no room for the context (NBP/1's 32 entries
        // or 4,096 bytes) goes as it would untraced, rather than failing because a tracer is on.
        var traced = headers
        tracer.inject(span.context, into: &traced, using: NotificationHeadersInjector())
        if traced.count <= WireFormat.maximumHeaderCount, traced.encodedByteCount <= WireFormat.maximumHeadersLength,
            traced.unrepresentable == nil
        {
            headers = traced
        }
        return span
    }

    /// Starts a consumer span for `notification`: a child of the context its headers carry (or
    /// of the consumer's current context when they carry none).
    func startConsumer(_ operation: String, _ notification: BusNotification) -> any Span {
        var context = InstrumentationContext.current ?? .topLevel
        tracer.extract(notification.headers, into: &context, using: NotificationHeadersExtractor())
        let destination = notification.name.rawValue
        let span = tracer.startSpan(operation + " " + destination, context: context, ofKind: .consumer)
        span.updateAttributes { attributes in
            attributes[MessagingAttribute.system] = MessagingAttribute.systemName
            attributes[MessagingAttribute.destinationName] = destination
            attributes[MessagingAttribute.operationType] = operation
            attributes[MessagingAttribute.operationName] = operation
            attributes[MessagingAttribute.messageID] = Self.messageID(notification)
            attributes[MessagingAttribute.bodySize] = notification.payload.count
            attributes[MessagingAttribute.sequence] = Int64(truncatingIfNeeded: notification.sequence)
            attributes[MessagingAttribute.publisherID] = Self.hex(notification.publisherID)
        }
        return span
    }

    /// Runs `body` in `process <name>` (kind consumer), with the span's context as the current
    /// one, so what `body` posts continues the trace.
    func process(
        _ notification: BusNotification, isolation: isolated (any Actor)? = #isolation, _ body: () async -> Void
    ) async {
        let span = startConsumer("process", notification)
        defer { span.end() }
        await InstrumentationContext.$current.withValue(span.context) { await body() }
    }

    /// NBP/1 identifies a notification by its publisher and per-(publisher, name) sequence.
    static func messageID(_ notification: BusNotification) -> String {
        hex(notification.publisherID) + "-" + String(notification.sequence)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
