import NotificationBus

/// A `ViewFeed` as message values of one type (`feed.messages(of:)`, the sequence
/// `task(subscribing: M.self)` hands its action). Gaps and undecodable notifications are
/// counted in the view's metrics and skipped; `events` yields them in-band.
public struct ViewFeedMessages<Message: BusMessage>: AsyncSequence, Sendable {
    public typealias Element = Message
    public typealias Failure = Never
    let feed: ViewFeed

    /// The same feed with gaps and undecodable notifications in-band, each message with its
    /// notification (publisher, sequence, time, headers).
    public var events: ViewFeedMessageEvents<Message> { ViewFeedMessageEvents(feed: feed) }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: events.makeAsyncIterator()) }

    /// Iterates the feed's messages.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        var events: ViewFeedMessageEvents<Message>.AsyncIterator

        /// The next message, skipping gaps and (counted) undecodable notifications.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Message? {
            while let event = await events.next(isolation: actor) {
                if case .message(let envelope) = event { return envelope.message }
            }
            return nil
        }

        public mutating func next() async -> Message? {
            await next(isolation: nil)
        }
    }
}
