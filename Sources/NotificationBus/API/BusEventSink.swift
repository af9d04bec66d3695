/// Receives a subscription's events on the bus's I/O thread as they arrive: no buffer and no task
/// in between, for consumers that keep their own queue (BusViews' task feeds do).
///
/// Every method runs on the I/O thread and must return promptly: take the event, resume whoever
/// waits for it, and return. Never block, never await.
public protocol BusEventSink: AnyObject, Sendable {
    /// One event, in stream order.
    func receive(_ event: BusEvent)
    /// Whether the sink can take no more for now: the bus stops reading its socket (back-pressure
    /// moves to ZeroMQ's high-water marks, as with `.suspendProducer`) until the sink calls
    /// `SinkSubscription.resumeReading()`.
    var isFull: Bool { get }
    /// The bus closed: no event follows.
    func finish()
}

/// A subscription delivering to a `BusEventSink`; it ends on `cancel()` or when dropped.
public final class SinkSubscription: Sendable {
    private let handle: SubscriptionHandle

    init(handle: SubscriptionHandle) {
        self.handle = handle
    }

    /// The pattern this subscription selects.
    public var pattern: NamePattern { handle.storage.pattern }

    /// The subscription's counters (`delivered` counts events handed to the sink).
    public var stats: SubscriptionStats { handle.storage.stats }

    /// The sink has room again: the bus may read its socket.
    public func resumeReading() {
        handle.storage.sinkHasRoom()
    }

    /// Ends the subscription now; unsubscribes when no other local subscription needs the prefix.
    public func cancel() {
        handle.storage.cancel()
    }
}
