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
