#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Tracing

/// Keeps a subscription alive while any copy of its sequence or iterator exists; the last one
/// to go cancels it, which unsubscribes at the publisher when no other local subscription needs the prefix.
final class SubscriptionHandle: Sendable {
    let storage: SubscriptionStorage
    /// The bus's tracer, for the spans of this subscription's iterators (nil: none).
    let tracer: BusTracer?

    init(storage: SubscriptionStorage, tracer: BusTracer? = nil) {
        self.storage = storage
        self.tracer = tracer
    }

    deinit {
        storage.cancel()
    }
}

/// An iterator's own buffer: filled a batch at a time from the shared buffer, so a consumer that
/// is behind takes one lock per batch, not per event. When the iterator goes, what it took but did
/// not use goes back to the shared buffer (or, once the subscription ended, to `discardedAtEnd`),
/// keeping the accounts exact.
@usableFromInline
final class IteratorBuffer {
    let handle: SubscriptionHandle
    /// Not checked for exclusive access at run time (a check per element showed in the consumer's
    /// profile). Safe: only the iterator that owns this buffer touches it, and an `AsyncIterator`
    /// is not `Sendable`, so one task at a time calls its `next()`; the one access held across a
    /// suspension (`refill(&events)`) is inside that same `next()`.
    @exclusivity(unchecked) @usableFromInline var events = EventQueue()
    /// The bus's tracer when this iterator makes spans (`receive <name>`, from the element's
    /// hand-over to the next call of `next()`); nil: none, and no tracing work.
    @usableFromInline let tracer: BusTracer?
    /// The span of the notification handed over last, ended by the next `next()` or by `deinit`.
    @exclusivity(unchecked) var openSpan: (any Span)?

    init(handle: SubscriptionHandle, tracer: BusTracer?) {
        self.handle = handle
        self.tracer = tracer
    }

    /// Inlinable: the common case (an event already taken) is a pop in the consumer's own frame.
    /// A cancelled task's loop ends at its next element, not after what is buffered (a busy
    /// subscription is never empty): one flag read per element, and one nil check for tracing.
    @inlinable @inline(__always)
    nonisolated(nonsending) func next() async -> BusEvent? {
        if tracer == nil, !Task.isCancelled, let event = events.popFirst() { return event }
        return await nextAfterRefill()
    }

    @usableFromInline
    nonisolated(nonsending) func nextAfterRefill() async -> BusEvent? {
        guard let tracer else { return await refillAndPop() }
        openSpan?.end()
        openSpan = nil
        let event: BusEvent?
        if !Task.isCancelled, let first = events.popFirst() { event = first } else { event = await refillAndPop() }
        if case .notification(let notification)? = event { openSpan = tracer.startConsumer("receive", notification) }
        return event
    }

    nonisolated(nonsending) func refillAndPop() async -> BusEvent? {
        if Task.isCancelled {
            // Ends the subscription (as cancelling a waiting loop does); what this iterator had
            // taken but not used is counted as discarded at the end.
            handle.storage.cancel()
            handle.storage.returnUndelivered(&events)
            return nil
        }
        guard await handle.storage.refill(&events) else { return nil }
        return events.popFirst()
    }

    deinit {
        openSpan?.end()
        handle.storage.returnUndelivered(&events)
    }
}
