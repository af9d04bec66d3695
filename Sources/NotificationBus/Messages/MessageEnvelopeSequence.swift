/// A typed subscription yielding each message with its notification (publisher, sequence, time,
/// headers). Gaps and undecodable notifications are counted in `stats`, not yielded, and a
/// retained value's clear is skipped; use `MessageEventSequence` to see them in-band.
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
        @usableFromInline var events: MessageEventSequence<Message>.AsyncIterator

        init(events: MessageEventSequence<Message>.AsyncIterator) {
            self.events = events
        }

        @inlinable
        public mutating func next() async -> TypedNotification<Message>? {
            await next(isolation: nil)
        }

        @inlinable @inline(__always)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> TypedNotification<Message>? {
            guard let (message, notification) = await events.nextMessage(isolation: actor) else { return nil }
            return TypedNotification(message: message, notification: notification)
        }
    }
}
