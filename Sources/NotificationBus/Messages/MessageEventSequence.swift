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
            case .notification(var notification):
                if let local = notification.localValue as? LocalMessageValue {
                    // This bus's own post, in this process: the value itself, no JSON (issue 42).
                    if let message = decoding.local(local.value) {
                        return .message(TypedNotification(message: message, notification: notification))
                    }
                    // Another type under the same name: from its JSON, as from another process.
                    LocalMessageValue.materialize(&notification)
                }
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
