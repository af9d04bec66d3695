import ZeroMQ

/// A binding publisher's per-subscriber budget (`BusConfiguration.subscriberBudget`), kept as the
/// broker keeps it (`SubscriberBudgetPolicy`): its XPUB sends with `ZMQ_XPUB_NODROP`, and
/// - while a subscriber past its budget in bytes moves (`SubscriberBacklogWatch`'s estimate of
///   what the publisher holds for it), nothing new is sent: the loop neither sends nor lends the
///   XPUB to posting threads, and looks again every 2 ms; the posts wait, and then `post`
///   (flow control); one past it for 10 s in a row is disconnected (slow);
/// - a refused frame (a queue at its mark) is held, the posts behind it waiting, while the
///   subscriber behind it moves;
/// - subscribers that take nothing are disconnected, ten times a second once past their budget,
///   or when a wait's patience runs out.
///
/// Socket ownership: the connections are sampled and ended through their descriptors (kernel
/// calls on descriptors libzmq's I/O thread owns, as the broker does), never through the XPUB;
/// the XPUB itself (a send past, `ZMQ_XPUB_NODROP`) is touched only from `sendPending`, which
/// runs while the loop holds it (awake, never while it is lent to posting threads).
extension BusEventLoop {
    /// Every wire byte sent on the XPUB so far (ZMTP's framing included): the loop's, and the
    /// posts posting threads sent themselves while it was lent.
    var wireBytesSent: UInt64 {
        posts.bytesSent &+ core.mailbox.withLock { $0.lending.sentBytes }
    }

    /// How many more wire bytes may go before the budget must look at the subscribers again
    /// (`SubscriberBudgetPolicy.allowance`): 0 while holding back, `UInt64.max` without a budget.
    var budgetAllowance: UInt64 {
        guard let policy = budgetPolicy else { return .max }
        return policy.allowance(wireSent: wireBytesSent)
    }

    /// Whether the loop holds back (sends nothing new) for a subscriber past its budget.
    var holdsForSubscriberBudget: Bool { budgetAllowance == 0 }

    /// The single-path, non-loopback send with the budget kept: looks at the subscribers first
    /// when the bytes sent could have put one past its budget, sends nothing new while one past it
    /// moves, at most the headroom otherwise; then hands a refusal to the policy and does what it
    /// says. Returns whether anything went (or a subscriber was disconnected).
    func sendKeepingBudget(on publisher: Socket) -> Bool {
        var looked = 0
        if holdsForSubscriberBudget {
            looked = disconnectSubscribersPastBudget()
            // Still past it (or looked at too recently): the posts wait for the next look.
            if holdsForSubscriberBudget { return looked > 0 }
        }
        let allowance = budgetAllowance
        let before = posts.bytesSent
        let frames = send(on: publisher, mode: .dontWait)
        if frames > 0 { framesAccepted() }
        // Stopped at the allowance, not refused: the next round looks before sending more.
        guard posts.hasUnsent, posts.bytesSent &- before < allowance, var policy = budgetPolicy else {
            return frames > 0 || looked > 0
        }
        let connections = sockets.subscriberConnections
        let (decision, disconnected) = policy.refused(
            now: Timestamps.monotonicNanoseconds(),
            samples: { connections?.samples(side: .subscriber) ?? [:] },
            disconnect: { disconnectSubscriber($0, unsentBytes: $1, .stalled) })
        budgetPolicy = policy
        switch decision {
        case .retry(let waitBegan):
            if waitBegan { stats.subscriberWaits += 1 }
            return frames > 0 || disconnected > 0 || looked > 0
        case .sendPast(let episodeStarted, let since):
            if episodeStarted {
                stats.slowSubscriberEpisodes += 1
                let waited = Timestamps.monotonicNanoseconds() &- since
                configuration.logger?.warning(
                    "\(BrokerEvent.slowSubscriberStarted(waited: .nanoseconds(Int64(clamping: waited))))",
                    metadata: ["side": "publisher"])
            }
            return sendOnePast(on: publisher) || frames > 0
        }
    }

    /// The next frame goes past the full queues: `ZMQ_XPUB_NODROP` off for that one send, so
    /// libzmq drops it for them (their subscribers count it as a gap) and everybody else gets it.
    private func sendOnePast(on publisher: Socket) -> Bool {
        let before = posts.counters.sent
        do {
            try publisher.set(.xpubNoDrop, false)
            let frames = posts.send(
                on: publisher, mode: .dontWait, maximumFrames: 1, stopped: { contextTerminated },
                failed: { record($0, "sending a notification past a full subscriber") })
            try publisher.set(.xpubNoDrop, true)
            stats.sentPastSlowSubscribers += posts.counters.sent &- before
            return frames > 0
        } catch {
            record(error, "switching ZMQ_XPUB_NODROP")
            try? publisher.set(.xpubNoDrop, true)  // restore; the failure is recorded above
            return false
        }
    }

    /// Frames went whole: a wait is over; a slow episode may end (logged).
    func framesAccepted() {
        guard budgetPolicy != nil,
            case .episodeEnded(let duration, let sentPast) = budgetPolicy?.accepted(now: Timestamps.monotonicNanoseconds())
        else { return }
        configuration.logger?.notice(
            "\(BrokerEvent.slowSubscriberEnded(after: .nanoseconds(Int64(clamping: duration)), sentPast: sentPast))",
            metadata: ["side": "publisher"])
    }

    /// Ten times a second, every 2 ms while holding back, and at once when the bytes sent since
    /// the last look could have put a subscriber past its budget (`SubscriberBudgetPolicy`):
    /// disconnects the subscribers past their budget that take nothing (`SubscriberStallWatch`,
    /// and `SubscriberBacklogWatch`'s estimate of what is held for each; nobody waited for them)
    /// or that stayed past it for the longest hold while moving (slow), and holds back for the
    /// others past it that move (a hold that begins counts in `subscriberWaits`). Returns how
    /// many it disconnected.
    @discardableResult
    func disconnectSubscribersPastBudget() -> Int {
        guard budgetPolicy != nil, let connections = sockets.subscriberConnections else { return 0 }
        let now = Timestamps.monotonicNanoseconds()
        let sent = wireBytesSent
        guard budgetPolicy?.lookIsDue(now: now, wireSent: sent) == true else { return 0 }
        do { try sockets.readAcceptEvents() } catch { record(error, "reading connection events") }
        let samples = connections.samples(side: .subscriber, onlyBehind: true)
        guard var policy = budgetPolicy else { return 0 }
        // The stall watch's byte count is the wire bytes too (it only compares them with the budget).
        let outcome = policy.look(samples, sent: sent, wireSent: sent, now: now) { descriptor, unsent, reason in
            disconnectSubscriber(descriptor, unsentBytes: unsent, reason)
        }
        budgetPolicy = policy
        if outcome.holdBegan { stats.subscriberWaits += 1 }
        if outcome != SubscriberBudgetPolicy.LookOutcome() { publishStats() }
        return outcome.stalledDisconnected + outcome.slowDisconnected
    }

    /// Ends a subscriber's connection (libzmq drops its queue; it reconnects and counts the gap),
    /// counts and logs it, and has the close wait for it to come back for the end of stream.
    /// False when the descriptor was already gone.
    private func disconnectSubscriber(
        _ descriptor: ConnectionDescriptor, unsentBytes: Int, _ reason: SubscriberBudgetPolicy.DisconnectReason
    ) -> Bool {
        // Its record is read before the shutdown: with CURVE the ZAP handler's thread reads the
        // monitor, and may read the disconnection (and forget the record) at once.
        let connection = sockets.subscriberConnections?.connection(side: .subscriber, descriptor: descriptor.rawValue)
        guard descriptor.shutDown() else { return false }
        // Its subscriptions end in a moment: those are a lost connection's, waited for at close
        // so that when it comes back the end of stream tells it its tail.
        publisherSide.connectionLost(wallClock: Timestamps.wallClockNanoseconds())
        let event: BrokerEvent
        switch reason {
        case .stalled:
            stats.stalledSubscribersDisconnected += 1
            event = .stalledSubscriberDisconnected(connection, unsentBytes: unsentBytes)
        case .slow:
            stats.slowSubscribersDisconnected += 1
            event = .slowSubscriberDisconnected(connection, unsentBytes: unsentBytes)
        }
        configuration.logger?.warning("\(event)", metadata: ["side": "publisher"])
        return true
    }

    /// While subscribers are connected, the loop wakes at least this often (ms) to watch them;
    /// while it holds back for one past its budget, every 2 ms (it lends the XPUB to nobody then,
    /// so nothing else would wake it when that one is back within its budget).
    var budgetWatchTimeout: Int? {
        guard budgetPolicy != nil else { return nil }
        if holdsForSubscriberBudget { return Self.budgetHoldMilliseconds }
        guard let connections = sockets.subscriberConnections, connections.open.load(ordering: .relaxed) > 0 else { return nil }
        return Int(SubscriberBudgetPolicy.checkInterval / 1_000_000)
    }

    /// How long the loop parks between two looks while it holds back (`holdCheckInterval`, ms).
    static var budgetHoldMilliseconds: Int { Int(SubscriberBudgetPolicy.holdCheckInterval / 1_000_000) }

    /// Holding back with posts waiting: parks until the next look is due, the XPUB not watched
    /// (nothing may be sent; subscription messages wait for the next round, 2 ms at most).
    func parkWhileHoldingForBudget() {
        park(timeout: Self.budgetHoldMilliseconds, includePublisher: false)
    }
}
