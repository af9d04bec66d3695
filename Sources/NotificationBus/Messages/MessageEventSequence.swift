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

    /// Iterates the subscription's events, decoding notifications as it goes. Inlinable, as
    /// `BusEventSequence`'s iterator: the consumer's module specializes it for its message type,
    /// and an element already buffered costs no async call (issue 42's typed paths showed the
    /// generic, non-inlinable `next()` frames in their profiles).
    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline var events: BusEventSequence.AsyncIterator
        @usableFromInline let decoding: MessageDecoding<Message>
        @usableFromInline let storage: SubscriptionStorage

        init(events: BusEventSequence.AsyncIterator, decoding: MessageDecoding<Message>, storage: SubscriptionStorage) {
            self.events = events
            self.decoding = decoding
            self.storage = storage
        }

        @inlinable
        public mutating func next() async -> MessageEvent<Message>? {
            await next(isolation: nil)
        }

        /// Runs on the caller's actor (`for await` passes it): decoding happens there.
        @inlinable @inline(__always)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> MessageEvent<Message>? {
            guard let event = await events.next(isolation: actor) else { return nil }
            switch consume event {  // moved out: binding a copy retained each field
            case .gap(let gap):
                return .gap(gap)
            case .notification(var notification):
                // This bus's own post of a `Message`: the value as posted, no coding.
                if let message = LocalMessageValue.take(notification.localValue, as: Message.self) {
                    return .message(TypedNotification(message: message, notification: notification))
                }
                if notification.clearsRetainedValue { return .cleared(notification) }
                do throws(UndecodableMessage) {
                    let message = try decoding.message(of: &notification, storage: storage)
                    return .message(TypedNotification(message: message, notification: notification))
                } catch {
                    return .undecodable(notification, error)
                }
            }
        }

        /// The next message, skipping gaps, clears of a retained value and undecodable
        /// notifications (counted): what `MessageSequence` and `MessageEnvelopeSequence` read,
        /// without making an event of each.
        @inlinable @inline(__always)
        mutating func nextMessage(isolation actor: isolated (any Actor)?) async -> (Message, BusNotification)? {
            while let event = await events.next(isolation: actor) {
                guard case .notification(var notification) = event else { continue }
                // This bus's own post of a `Message`: the value as posted, no coding.
                if let message = LocalMessageValue.take(notification.localValue, as: Message.self) {
                    return (message, notification)
                }
                // A clear says the name has no current value: no message, and not undecodable.
                if notification.clearsRetainedValue { continue }
                do throws(UndecodableMessage) {
                    return (try decoding.message(of: &notification, storage: storage), notification)
                } catch {
                    continue
                }
            }
            return nil
        }
    }
}
