/// A typed subscription as an `AsyncSequence` of message values: `for await order in try
/// bus.messages(of: OrderCreated.self)`. Gaps and undecodable notifications are counted in
/// `stats` (`lostUpstream`, `undecodable`), not yielded; the clear of a retained value (no
/// current message) is skipped, not counted as undecodable.
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
        @usableFromInline var events: MessageEventSequence<Message>.AsyncIterator

        init(events: MessageEventSequence<Message>.AsyncIterator) {
            self.events = events
        }

        @inlinable
        public mutating func next() async -> Message? {
            await next(isolation: nil)
        }

        @inlinable @inline(__always)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Message? {
            await events.nextMessage(isolation: actor)?.0
        }
    }
}
