import NotificationBus

/// A `ViewFeed` as `MessageEvent`s of one message type (`feed.messageEvents(of:)`): decoded
/// messages with the notification that carried them, gaps, notifications that did not decode and
/// clears of a retained value, in-band where they happened. Decodes in `next()`, on the consuming task's isolation; a message
/// this process's bus posted itself is the value as posted, with no coding.
public struct ViewFeedMessageEvents<Message: BusMessage>: AsyncSequence, Sendable {
    public typealias Element = MessageEvent<Message>
    public typealias Failure = Never
    let feed: ViewFeed

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: feed.makeAsyncIterator(), storage: feed.storage) }

    /// Iterates the feed's events, decoding notifications as it goes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        var events: ViewFeed.AsyncIterator
        let storage: ViewFeedStorage

        /// The next event; an undecodable notification is counted in `ViewMetrics.undecodable`.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> MessageEvent<Message>? {
            guard let event = await events.next(isolation: actor) else { return nil }
            switch event {
            case .gap(let gap):
                return .gap(gap)
            case .notification(let notification):
                // A retained value's clear: in-band, not counted as undecodable.
                if notification.clearsRetainedValue { return .cleared(notification) }
                do throws(UndecodableMessage) {
                    let message = try notification.message(as: Message.self, countingIn: storage.decodeCounter)
                    return .message(TypedNotification(message: message, notification: notification))
                } catch {
                    storage.noteUndecodable()
                    return .undecodable(notification, error)
                }
            }
        }

        public mutating func next() async -> MessageEvent<Message>? {
            await next(isolation: nil)
        }
    }
}
