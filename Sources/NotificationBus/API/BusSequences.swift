/// A live subscription as an `AsyncSequence` of notifications (gaps are counted in `stats`, not yielded).
///
/// The subscription starts when `Bus.notifications(named:)` returns and is live at a publisher once
/// `await bus.ready(pattern)` returns. It ends when the consuming task is cancelled (at its next
/// element, even while more are buffered), when the last copy of the sequence and its iterator is
/// dropped, or when the bus closes (after the buffer drains).
///
/// Leaving a loop (`break`) while the sequence lives keeps the subscription: the next loop goes on
/// with the first notification the last one did not take. Several tasks may iterate one sequence
/// at once: each notification goes to one of them (sharing the work), and cancelling any of them
/// ends the subscription for all. Two iterators used in turn by one task interleave their batches,
/// so keep to one iterator at a time where order matters.
public struct NotificationSequence: AsyncSequence, Sendable {
    public typealias Element = BusNotification
    /// The same subscription with its gaps; this view skips them.
    public let events: BusEventSequence

    /// The pattern this subscription selects.
    public var pattern: NamePattern { events.pattern }

    /// The subscription's counters now.
    public var stats: SubscriptionStats { events.stats }

    /// Ends the subscription now (the same as cancelling the consuming task).
    public func cancel() { events.cancel() }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: events.makeAsyncIterator()) }

    /// Iterates the subscription's notifications.
    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline var events: BusEventSequence.AsyncIterator

        @usableFromInline init(events: BusEventSequence.AsyncIterator) {
            self.events = events
        }

        @inlinable
        public mutating func next() async -> BusNotification? {
            await next(isolation: nil)
        }

        /// Runs on the caller's actor (`for await` passes it): a main-actor loop takes each
        /// notification without hopping off the main actor and back. Inlinable, so a loop in
        /// another module needs no executor check per element either.
        @inlinable @inline(__always)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> BusNotification? {
            // The buffer's `next()` is nonisolated(nonsending): it runs right here, no executor check.
            while let event = await events.buffer.next() {
                if case .notification(let notification) = event { return notification }
            }
            return nil
        }
    }
}

/// A live subscription as an `AsyncSequence` of `BusEvent`s: notifications, and gaps in-band
/// exactly where notifications were lost. Lifetime as for `NotificationSequence`.
public struct BusEventSequence: AsyncSequence, Sendable {
    public typealias Element = BusEvent
    let handle: SubscriptionHandle
    /// Whether its iterators make `receive` spans when the bus has a tracer (an observer's loop
    /// does not: its `process` span is around the block).
    let traced: Bool

    init(handle: SubscriptionHandle, traced: Bool = true) {
        self.handle = handle
        self.traced = traced
    }

    /// The pattern this subscription selects.
    public var pattern: NamePattern { handle.storage.pattern }

    /// The subscription's counters now.
    public var stats: SubscriptionStats { handle.storage.stats }

    /// Ends the subscription now.
    public func cancel() { handle.storage.cancel() }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: IteratorBuffer(handle: handle, tracer: traced ? handle.tracer : nil)) }

    /// Iterates the subscription's events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline let buffer: IteratorBuffer

        @usableFromInline init(buffer: IteratorBuffer) {
            self.buffer = buffer
        }

        @inlinable
        public mutating func next() async -> BusEvent? {
            await buffer.next()
        }

        /// Runs on the caller's actor (`for await` passes it), without a hop per element.
        @inlinable @inline(__always)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> BusEvent? {
            await buffer.next()
        }
    }
}
