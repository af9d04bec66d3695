/// A decoded message with the notification that carried it: its name, publisher, sequence,
/// publish time and headers (`Bus.messageEnvelopes(of:)`).
public struct TypedNotification<Message: Sendable>: Sendable {
    /// The decoded value.
    public var message: Message
    /// The notification as it arrived (its payload is the message's JSON).
    public var notification: BusNotification

    public init(message: Message, notification: BusNotification) {
        self.message = message
        self.notification = notification
    }

    /// The name it was posted under (`<busName>.<subject id>` for a message with a subject).
    public var name: NotificationName { notification.name }
    /// The publisher's id.
    public var publisherID: UInt64 { notification.publisherID }
    /// Its sequence number per (publisher, name).
    public var sequence: UInt64 { notification.sequence }
    /// Publish time in nanoseconds since the Unix epoch (UTC).
    public var timestamp: UInt64 { notification.timestamp }
    /// The headers posted with it.
    public var headers: NotificationHeaders { notification.headers }
}

extension TypedNotification: Equatable where Message: Equatable {}
extension TypedNotification: Hashable where Message: Hashable {}

/// One element of `Bus.messageEvents(of:)`: a message, a gap where notifications were lost, or a
/// notification that did not decode (counted in `SubscriptionStats.undecodable` too).
public enum MessageEvent<Message: Sendable>: Sendable {
    /// A decoded message and its notification.
    case message(TypedNotification<Message>)
    /// Notifications lost at this point of the stream (as `BusEvent.gap`).
    case gap(Gap)
    /// A notification whose payload is not a `Message`: malformed or mistyped JSON, another
    /// content type, or (for a family) a name no member has.
    case undecodable(BusNotification, UndecodableMessage)
}

extension MessageEvent: Equatable where Message: Equatable {}
extension MessageEvent: Hashable where Message: Hashable {}

/// A typed subscription as an `AsyncSequence` of `MessageEvent`s. Decodes each notification in
/// `next()`, on the consuming task (never on the bus's I/O thread). Lifetime as for
/// `NotificationSequence`: it ends when its task is cancelled, when the last copy is dropped
/// (unsubscribing at the publisher), or when the bus closes.
public struct MessageEventSequence<Message: Sendable>: AsyncSequence, Sendable {
    public typealias Element = MessageEvent<Message>
    /// The same subscription as bytes.
    public let events: BusEventSequence
    let decoding: MessageDecoding<Message>

    init(events: BusEventSequence, decoding: MessageDecoding<Message>) {
        self.events = events
        self.decoding = decoding
    }

    /// The pattern this subscription selects.
    public var pattern: NamePattern { events.pattern }

    /// The subscription's counters now, `undecodable` included.
    public var stats: SubscriptionStats { events.stats }

    /// Ends the subscription now.
    public func cancel() { events.cancel() }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(events: events.makeAsyncIterator(), decoding: decoding, storage: events.handle.storage)
    }

    /// Iterates the subscription's events, decoding notifications as it goes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var events: BusEventSequence.AsyncIterator
        let decoding: MessageDecoding<Message>
        let storage: SubscriptionStorage

        public mutating func next() async -> MessageEvent<Message>? {
            await next(isolation: nil)
        }

        /// Runs on the caller's actor (`for await` passes it): decoding happens there.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> MessageEvent<Message>? {
            guard let event = await events.next(isolation: actor) else { return nil }
            switch event {
            case .gap(let gap):
                return .gap(gap)
            case .notification(let notification):
                do throws(UndecodableMessage) {
                    let message = try decoding.decode(notification)
                    storage.core.noteMessageDecoded()
                    return .message(TypedNotification(message: message, notification: notification))
                } catch {
                    storage.noteUndecodable()
                    return .undecodable(notification, error)
                }
            }
        }
    }
}

/// A typed subscription yielding each message with its notification (publisher, sequence, time,
/// headers). Gaps and undecodable notifications are counted in `stats`, not yielded; use
/// `MessageEventSequence` to see them in-band.
public struct MessageEnvelopeSequence<Message: Sendable>: AsyncSequence, Sendable {
    public typealias Element = TypedNotification<Message>
    /// The same subscription with its gaps and undecodable notifications.
    public let events: MessageEventSequence<Message>

    init(events: MessageEventSequence<Message>) {
        self.events = events
    }

    public var pattern: NamePattern { events.pattern }
    public var stats: SubscriptionStats { events.stats }
    public func cancel() { events.cancel() }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: events.makeAsyncIterator()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var events: MessageEventSequence<Message>.AsyncIterator

        public mutating func next() async -> TypedNotification<Message>? {
            await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> TypedNotification<Message>? {
            while let event = await events.next(isolation: actor) {
                if case .message(let envelope) = event { return envelope }
            }
            return nil
        }
    }
}

/// A typed subscription as an `AsyncSequence` of message values: `for await order in try
/// bus.messages(of: OrderCreated.self)`. Gaps and undecodable notifications are counted in
/// `stats` (`lostUpstream`, `undecodable`), not yielded.
public struct MessageSequence<Message: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Message
    /// The same subscription with gaps and undecodable notifications in-band.
    public let events: MessageEventSequence<Message>

    init(events: MessageEventSequence<Message>) {
        self.events = events
    }

    public var pattern: NamePattern { events.pattern }
    public var stats: SubscriptionStats { events.stats }
    public func cancel() { events.cancel() }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: events.makeAsyncIterator()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var events: MessageEventSequence<Message>.AsyncIterator

        public mutating func next() async -> Message? {
            await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Message? {
            while let event = await events.next(isolation: actor) {
                if case .message(let envelope) = event { return envelope.message }
            }
            return nil
        }
    }
}
