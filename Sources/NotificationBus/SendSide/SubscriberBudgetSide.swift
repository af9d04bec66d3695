import ZeroMQ

/// The per-subscriber budget of a sender whose peers are the subscribers themselves (the
/// broker's forwarder and a publisher that binds), put together once: it carries out
/// `SubscriberBudgetPolicy`'s actions against the subscribers' connections (sampling them, ending
/// one), counts what happened, and is the one place that sends past full queues
/// (`ZMQ_XPUB_NODROP` off for one send). Its owner copies `counters` into its statistics and
/// reports the events the calls return (the broker to its event handler, a bus to its logger).
///
/// Socket ownership: the connections are sampled and ended through their descriptors (kernel
/// calls on descriptors libzmq's I/O thread owns), never through the XPUB; the XPUB itself is
/// touched only in `sendPast`, which its owner calls on the thread that holds the socket.
struct SubscriberBudgetSide {
    /// What the budget did, since the sender started.
    struct Counters: Equatable {
        /// Waits that began: for a refused frame, or a hold for a moving subscriber past its budget.
        var waits: UInt64 = 0
        /// Slow episodes: frames began to go past a subscriber that moves too slowly.
        var slowEpisodes: UInt64 = 0
        /// Notifications sent past full queues (`sentPast`), lost for those queues' subscribers.
        var sentPast: UInt64 = 0
        /// Subscribers past their budget that took nothing for the patience, disconnected.
        var stalledDisconnected: UInt64 = 0
        /// Subscribers past their budget that moved, but not back within it for the longest hold.
        var slowDisconnected: UInt64 = 0
    }

    /// What to do with the refused frame.
    enum Decision: Equatable {
        /// Hold it and try again (the posters wait). `waitBegan`: a new wait, counted in `waits`.
        case retry(waitBegan: Bool)
        /// Send it past the full queues (`sendPast`).
        case sendPast
    }

    private(set) var policy: SubscriberBudgetPolicy
    private(set) var counters = Counters()
    private let connections: ConnectionTracker

    init(policy: SubscriberBudgetPolicy, connections: ConnectionTracker) {
        self.policy = policy
        self.connections = connections
    }

    /// The socket refused the frame at the head at `now`: carries out the policy's actions (a
    /// baseline of the connections when a wait begins; when the patience ran out, the stalled
    /// connections ended) and says what to do with the frame. `report` gets each event (a
    /// disconnection, a slow episode's start).
    mutating func refused(now: UInt64, report: (BrokerEvent) -> Void) -> Decision {
        var action = policy.refused(now: now)
        if case .findStalled = action {
            let samples = connections.samples(side: .subscriber)
            var disconnected = 0
            for descriptor in policy.stalled(in: samples)
            where end(descriptor, unsentBytes: samples[descriptor]?.unsentBytes ?? 0, .stalled, report: report) {
                disconnected += 1
            }
            action = policy.stalledFound(disconnected: disconnected, samples: samples, now: now)
        }
        switch action {
        case .retry(let waitBegan, let takeBaseline):
            if takeBaseline { policy.beginWait(connections.samples(side: .subscriber)) }
            if waitBegan { counters.waits &+= 1 }
            return .retry(waitBegan: waitBegan)
        case .sendPast(let episodeStarted, let since):
            if episodeStarted {
                counters.slowEpisodes &+= 1
                report(.slowSubscriberStarted(waited: .nanoseconds(Int64(clamping: now &- since))))
            }
            return .sendPast
        case .findStalled:
            // `stalledFound` never answers it; should it, the frame is held and asked about next time.
            return .retry(waitBegan: false)
        }
    }

    /// The socket took a frame whole at `now`: a wait is over; a slow episode may end (its event).
    mutating func accepted(now: UInt64) -> BrokerEvent? {
        guard case .episodeEnded(let duration, let sentPast) = policy.accepted(now: now) else { return nil }
        return .slowSubscriberEnded(after: .nanoseconds(Int64(clamping: duration)), sentPast: sentPast)
    }

    /// The watches' look, if one is due at `now` with `sent` bytes (messages) and `wireSent` bytes
    /// (with ZMTP's framing) sent so far: ends the connections the policy names (`report` gets
    /// each) and counts a hold that began. Returns how many it ended, or nil when no look was due.
    mutating func lookIfDue(now: UInt64, sent: UInt64, wireSent: UInt64, report: (BrokerEvent) -> Void) -> Int? {
        guard policy.lookIsDue(now: now, wireSent: wireSent) else { return nil }
        let actions = policy.look(connections.samples(side: .subscriber, onlyBehind: true), sent: sent, wireSent: wireSent, now: now)
        var ended = 0
        for disconnection in actions.disconnect
        where end(disconnection.descriptor, unsentBytes: disconnection.unsentBytes, disconnection.reason, report: report) {
            ended += 1
        }
        if actions.holdBegan { counters.waits &+= 1 }
        return ended
    }

    /// `notifications` went past full queues (`sendPast`).
    mutating func sentPast(_ notifications: UInt64) {
        counters.sentPast &+= notifications
    }

    /// Sends through `send` with `ZMQ_XPUB_NODROP` off on `socket` for that one send, so libzmq
    /// drops the frame for the full queues (their subscribers count a gap) and everybody else gets
    /// it; switched back on at once, also when the send fails. Returns what `send` returned.
    static func sendPast<Result>(
        on socket: Socket, _ send: () throws(ZMQError) -> Result
    ) throws(ZMQError) -> Result {
        try refusesAtFullQueues(socket, false)
        let result: Result
        do {
            result = try send()
        } catch {
            try? refusesAtFullQueues(socket, true)  // restore; the send's error is the one to report
            throw error
        }
        try refusesAtFullQueues(socket, true)
        return result
    }

    /// Sets whether `socket` (an XPUB) refuses a frame while a matching queue is full
    /// (`ZMQ_XPUB_NODROP` on: the sender holds it) or drops it for that queue (off).
    static func refusesAtFullQueues(_ socket: Socket, _ refuses: Bool) throws(ZMQError) {
        try socket.set(.xpubNoDrop, refuses)
    }

    /// Ends a subscriber's connection (libzmq then drops its queue; it reconnects and counts the
    /// gap), counts it and reports it. False when the descriptor was already gone.
    private mutating func end(
        _ descriptor: ConnectionDescriptor, unsentBytes: Int, _ reason: SubscriberBudgetPolicy.DisconnectReason,
        report: (BrokerEvent) -> Void
    ) -> Bool {
        // Its record is read before the shutdown: with CURVE the ZAP handler's thread reads the
        // monitor, and may read the disconnection (and forget the record) at once.
        let connection = connections.connection(side: .subscriber, descriptor: descriptor.rawValue)
        guard descriptor.shutDown() else { return false }
        policy.ended(descriptor)
        switch reason {
        case .stalled:
            counters.stalledDisconnected &+= 1
            report(.stalledSubscriberDisconnected(connection, unsentBytes: unsentBytes))
        case .slow:
            counters.slowDisconnected &+= 1
            report(.slowSubscriberDisconnected(connection, unsentBytes: unsentBytes))
        }
        return true
    }
}

extension BrokerEvent {
    /// A subscriber's connection ended for its budget (stalled or slow).
    var isSubscriberDisconnection: Bool {
        switch self {
        case .stalledSubscriberDisconnected, .slowSubscriberDisconnected: true
        default: false
        }
    }
}
