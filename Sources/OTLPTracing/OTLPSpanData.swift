/// An ended span as OTLP carries it: what the exporter queues and encodes.
public struct OTLPSpanData: Sendable, Equatable {
    /// OTLP's `Span.SpanKind`.
    public enum Kind: UInt64, Sendable {
        case unspecified = 0, `internal` = 1, server = 2, client = 3, producer = 4, consumer = 5
    }

    /// OTLP's `Status.StatusCode`.
    public enum StatusCode: UInt64, Sendable {
        case unset = 0, ok = 1, error = 2
    }

    public struct Status: Sendable, Equatable {
        public var code: StatusCode
        public var message: String

        public init(code: StatusCode, message: String = "") {
            self.code = code
            self.message = message
        }
    }

    public struct Event: Sendable, Equatable {
        public var timeUnixNano: UInt64
        public var name: String
        public var attributes: [OTLPAttribute]

        public init(timeUnixNano: UInt64, name: String, attributes: [OTLPAttribute] = []) {
            self.timeUnixNano = timeUnixNano
            self.name = name
            self.attributes = attributes
        }
    }

    public struct Link: Sendable, Equatable {
        public var context: OTLPSpanContext
        public var attributes: [OTLPAttribute]

        public init(context: OTLPSpanContext, attributes: [OTLPAttribute] = []) {
            self.context = context
            self.attributes = attributes
        }
    }

    public var context: OTLPSpanContext
    public var parentSpanID: UInt64?
    /// Whether the parent came from another process (OTLP's span flags, bits 8 and 9).
    public var parentIsRemote: Bool
    public var name: String
    public var kind: Kind
    public var startTimeUnixNano: UInt64
    public var endTimeUnixNano: UInt64
    public var attributes: [OTLPAttribute]
    public var events: [Event]
    public var links: [Link]
    public var status: Status?
    public var droppedEvents: UInt32
    public var droppedLinks: UInt32

    public init(
        context: OTLPSpanContext, parentSpanID: UInt64?, parentIsRemote: Bool = false, name: String, kind: Kind,
        startTimeUnixNano: UInt64, endTimeUnixNano: UInt64, attributes: [OTLPAttribute] = [], events: [Event] = [],
        links: [Link] = [], status: Status? = nil, droppedEvents: UInt32 = 0, droppedLinks: UInt32 = 0
    ) {
        self.context = context
        self.parentSpanID = parentSpanID
        self.parentIsRemote = parentIsRemote
        self.name = name
        self.kind = kind
        self.startTimeUnixNano = startTimeUnixNano
        self.endTimeUnixNano = endTimeUnixNano
        self.attributes = attributes
        self.events = events
        self.links = links
        self.status = status
        self.droppedEvents = droppedEvents
        self.droppedLinks = droppedLinks
    }
}

/// One attribute: OTLP's `KeyValue` with the `AnyValue` kinds a span uses.
public struct OTLPAttribute: Sendable, Equatable {
    public indirect enum Value: Sendable, Equatable {
        case string(String)
        case bool(Bool)
        case int(Int64)
        case double(Double)
        case array([Value])
    }

    public var key: String
    public var value: Value

    public init(_ key: String, _ value: Value) {
        self.key = key
        self.value = value
    }
}
