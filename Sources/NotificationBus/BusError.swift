import ZeroMQ

/// Why a bus operation failed.
public enum BusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bus has been closed (or is closing).
    case closed
    /// This bus has no publisher socket (`BusConfiguration.publish` is empty).
    case notAPublisher
    /// This bus has no subscriber socket (`BusConfiguration.subscribe` is empty).
    case notASubscriber
    /// A synchronous `post` found the outbound queue full (use `await post` to wait instead).
    case outboundQueueFull(capacity: Int)
    /// The payload exceeds `BusConfiguration.maximumPayload`.
    case payloadTooLarge(byteCount: Int, maximum: Int)
    /// The headers break NBP/1's limits.
    case invalidHeaders(EncodeError)
    /// A name or pattern is invalid.
    case invalidName(NameError)
    /// Names starting with `_nbus.` are the bus's own control messages.
    case reservedName(NotificationName)
    /// A wait for `what` did not complete within `after`.
    case timedOut(what: String, after: Duration)
    /// ZeroMQ refused something (binding an endpoint in use, a malformed endpoint).
    case transport(ZMQError)
    /// The awaiting task was cancelled.
    case cancelled
    /// The operating system refused a resource (a thread, an eventfd).
    case system(String)
    /// The CURVE settings cannot be applied (e.g. a socket that both binds and connects).
    case security(String)
    /// `ready(_:)` for a pattern no subscription of this bus can receive a name of.
    case notSubscribed(NamePattern)
    /// A `BusConfiguration` value out of range (`Bus.init` says which).
    case invalidConfiguration(String)
    /// `request` found nothing subscribed to the request's name at this publisher.
    case noResponders(NotificationName)
    /// `reply(to:with:)` was given a notification without a valid `reply-to` header.
    case notARequest(NotificationName)

    public var description: String {
        switch self {
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
        case .notSubscribed(let pattern):
            return "this bus has no subscription to \(pattern): make it (notifications(named:), events(named:), addObserver) before ready(_:)"
        }
    }
}
