import ZeroMQ

/// Why a bus operation failed.
///
/// A struct with static members, not an enum, decided before 1.0: the API throws it typed
/// (`throws(BusError)`), so an enum's cases would be part of every caller's exhaustive `switch`,
/// and telling one more failure apart (a new case) would break their code in a minor version.
/// Here a new kind is a new static member (the shape of swift-nio-ssl's `NIOSSLExtraError`).
/// Callers compare (`error == .closed`), match the kinds that carry nothing (`catch .cancelled`,
/// `if case .closed = error`), or switch on `code` with a `default`; what a kind carries is read
/// through `transportError` and `reason`, and `description` says it all in a sentence.
public struct BusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of failure, for a `switch` (with a `default`: kinds may be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let closed = Code("closed")
        public static let notAPublisher = Code("notAPublisher")
        public static let notASubscriber = Code("notASubscriber")
        public static let outboundQueueFull = Code("outboundQueueFull")
        public static let payloadTooLarge = Code("payloadTooLarge")
        public static let invalidHeaders = Code("invalidHeaders")
        public static let invalidName = Code("invalidName")
        public static let reservedName = Code("reservedName")
        public static let timedOut = Code("timedOut")
        public static let transport = Code("transport")
        public static let cancelled = Code("cancelled")
        public static let system = Code("system")
        public static let security = Code("security")
        public static let notSubscribed = Code("notSubscribed")
        public static let invalidConfiguration = Code("invalidConfiguration")
        public static let noResponders = Code("noResponders")
        public static let notARequest = Code("notARequest")
        public static let encodingFailed = Code("encodingFailed")
        public static let subjectRequired = Code("subjectRequired")
        public static let invalidSubject = Code("invalidSubject")
    }

    /// What the error is and carries; private, so that adding a kind breaks no caller.
    private enum Kind: Equatable, Sendable {
        case closed
        case notAPublisher
        case notASubscriber
        case outboundQueueFull(capacity: Int)
        case payloadTooLarge(byteCount: Int, maximum: Int)
        case invalidHeaders(EncodeError)
        case invalidName(NameError)
        case reservedName(NotificationName)
        case timedOut(what: String, after: Duration)
        case transport(ZMQError)
        case cancelled
        case system(String)
        case security(String)
        case notSubscribed(NamePattern)
        case invalidConfiguration(String)
        case noResponders(NotificationName)
        case notARequest(NotificationName)
        case encodingFailed(type: String, reason: String)
        case subjectRequired(type: String, name: NotificationName)
        case invalidSubject(id: String, reason: String)
    }

    private let kind: Kind

    private init(_ kind: Kind) { self.kind = kind }

    /// The bus has been closed (or is closing).
    public static let closed = BusError(.closed)
    /// This bus has no publisher socket (`BusConfiguration.publish` is empty).
    public static let notAPublisher = BusError(.notAPublisher)
    /// This bus has no subscriber socket (`BusConfiguration.subscribe` is empty).
    public static let notASubscriber = BusError(.notASubscriber)
    /// A synchronous `post` found the outbound queue full (use `await post` to wait instead).
    public static func outboundQueueFull(capacity: Int) -> BusError { BusError(.outboundQueueFull(capacity: capacity)) }
    /// The payload exceeds `BusConfiguration.maximumPayload`.
    public static func payloadTooLarge(byteCount: Int, maximum: Int) -> BusError {
        BusError(.payloadTooLarge(byteCount: byteCount, maximum: maximum))
    }
    /// The headers break NBP/1's limits.
    public static func invalidHeaders(_ error: EncodeError) -> BusError { BusError(.invalidHeaders(error)) }
    /// A name or pattern is invalid.
    public static func invalidName(_ error: NameError) -> BusError { BusError(.invalidName(error)) }
    /// Names starting with `_nbus.` are the bus's own control messages.
    public static func reservedName(_ name: NotificationName) -> BusError { BusError(.reservedName(name)) }
    /// A wait for `what` did not complete within `after`.
    public static func timedOut(what: String, after: Duration) -> BusError { BusError(.timedOut(what: what, after: after)) }
    /// ZeroMQ refused something (binding an endpoint in use, a malformed endpoint).
    public static func transport(_ error: ZMQError) -> BusError { BusError(.transport(error)) }
    /// The awaiting task was cancelled.
    public static let cancelled = BusError(.cancelled)
    /// The operating system refused a resource (a thread, an eventfd).
    public static func system(_ text: String) -> BusError { BusError(.system(text)) }
    /// The CURVE settings cannot be applied (e.g. a socket that both binds and connects).
    public static func security(_ text: String) -> BusError { BusError(.security(text)) }
    /// `ready(_:)` for a pattern no subscription of this bus can receive a name of.
    public static func notSubscribed(_ pattern: NamePattern) -> BusError { BusError(.notSubscribed(pattern)) }
    /// A `BusConfiguration` value out of range (`Bus.init` says which).
    public static func invalidConfiguration(_ text: String) -> BusError { BusError(.invalidConfiguration(text)) }
    /// `request` found nothing subscribed to the request's name at this publisher.
    public static func noResponders(_ name: NotificationName) -> BusError { BusError(.noResponders(name)) }
    /// `reply(to:with:)` was given a notification without a valid `reply-to` header.
    public static func notARequest(_ name: NotificationName) -> BusError { BusError(.notARequest(name)) }
    /// A message type's value could not be encoded (its `Encodable` conformance threw).
    public static func encodingFailed(type: String, reason: String) -> BusError {
        BusError(.encodingFailed(type: type, reason: reason))
    }
    /// A message type whose `Subject` is a `BusSubject` was posted without one: its observers
    /// subscribe `<busName>.*`, so a post under the bare name would reach none of them.
    public static func subjectRequired(type: String, name: NotificationName) -> BusError {
        BusError(.subjectRequired(type: type, name: name))
    }
    /// A `BusSubject`'s `busSubjectID` is not one valid name token.
    public static func invalidSubject(id: String, reason: String) -> BusError {
        BusError(.invalidSubject(id: id, reason: reason))
    }

    /// The kind of failure.
    public var code: Code {
        switch kind {
        case .closed: return .closed
        case .notAPublisher: return .notAPublisher
        case .notASubscriber: return .notASubscriber
        case .outboundQueueFull: return .outboundQueueFull
        case .payloadTooLarge: return .payloadTooLarge
        case .invalidHeaders: return .invalidHeaders
        case .invalidName: return .invalidName
        case .reservedName: return .reservedName
        case .timedOut: return .timedOut
        case .transport: return .transport
        case .cancelled: return .cancelled
        case .system: return .system
        case .security: return .security
        case .notSubscribed: return .notSubscribed
        case .invalidConfiguration: return .invalidConfiguration
        case .noResponders: return .noResponders
        case .notARequest: return .notARequest
        case .encodingFailed: return .encodingFailed
        case .subjectRequired: return .subjectRequired
        case .invalidSubject: return .invalidSubject
        }
    }

    /// The ZeroMQ error behind a `.transport` failure; nil for every other kind.
    public var transportError: ZMQError? {
        if case .transport(let error) = kind { return error }
        return nil
    }

    /// The text a `.system`, `.security` or `.invalidConfiguration` failure carries (which value
    /// or resource, without the sentence around it); nil for every other kind.
    public var reason: String? {
        switch kind {
        case .system(let text), .security(let text), .invalidConfiguration(let text): return text
        default: return nil
        }
    }

    public var description: String {
        switch kind {
        case .closed: return "the bus is closed: open a new Bus to post, subscribe or wait again"
        case .notAPublisher: return "this bus has no publisher socket (configure `publish`)"
        case .notASubscriber: return "this bus has no subscriber socket (configure `subscribe`)"
        case .outboundQueueFull(let capacity):
            return "the outbound queue is full (\(capacity) posts waiting): `await post` waits for room; or raise BusConfiguration.outboundCapacity"
        case .payloadTooLarge(let count, let maximum):
            return "payload of \(count) bytes exceeds the maximum of \(maximum): split it, or raise BusConfiguration.maximumPayload on the publisher and every subscriber"
        case .invalidHeaders(let error): return "invalid headers: \(error)"
        case .invalidName(let error): return "invalid name: \(error)"
        case .reservedName(let name): return "'\(name)' is reserved: names starting with _nbus. are the bus's own"
        case .timedOut(let what, let after):
            let milliseconds = Timestamps.boundedMilliseconds(after)
            let span = milliseconds < 10_000 ? "\(milliseconds) ms" : "\(milliseconds / 1_000) s"
            return "timed out after \(span) waiting for \(what)"
        case .transport(let error): return "transport error: \(error)"
        case .cancelled: return "cancelled: the waiting task was cancelled"
        case .system(let text): return "system error: \(text)"
        case .security(let text): return "CURVE: \(text)"
        case .invalidConfiguration(let text): return "invalid configuration: \(text)"
        case .noResponders(let name): return "no responders: nothing subscribes to \(name); start a responder (Bus.respond, nbus reply) first"
        case .notARequest(let name): return "\(name) is not a request: it has no valid reply-to header"
        case .encodingFailed(let type, let reason): return "\(type) could not be encoded: \(reason)"
        case .subjectRequired(let type, let name):
            return "\(type)'s Subject is a BusSubject: post it with post(_:subject:) (its observers subscribe \(name).*)"
        case .invalidSubject(let id, let reason):
            return "subject id '\(id)' is not one name token: \(reason)"
        case .notSubscribed(let pattern):
            return "this bus has no subscription to \(pattern): make it (notifications(named:), events(named:), addObserver) before ready(_:)"
        }
    }
}
