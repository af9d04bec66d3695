import ZeroMQ

/// A binding publisher's per-subscriber budget (`BusConfiguration.subscriberBudget`), kept as the
/// broker keeps it (`SubscriberBudgetPolicy`): its XPUB sends with `ZMQ_XPUB_NODROP`, a refused
/// frame is held (the posts behind it wait, and then `post`: flow control) while the subscriber
/// behind it moves, and subscribers that take nothing are disconnected, ten times a second once
/// past their budget, or when a wait's patience runs out.
///
/// Socket ownership: the connections are sampled and ended through their descriptors (kernel
/// calls on descriptors libzmq's I/O thread owns, as the broker does), never through the XPUB;
/// the XPUB itself (a send past, `ZMQ_XPUB_NODROP`) is touched only from `sendPending`, which
/// runs while the loop holds it (awake, never while it is lent to posting threads).
extension BusEventLoop {
    /// The single-path, non-loopback send with the budget kept: sends what it can, then hands a
    /// refusal to the policy and does what it says. Returns whether anything went.
    func sendKeepingBudget(on publisher: Socket) -> Bool {
        let frames = send(on: publisher, mode: .dontWait)
        if frames > 0 { framesAccepted() }
        guard posts.hasUnsent, var policy = budgetPolicy else { return frames > 0 }
        let connections = sockets.subscriberConnections
        let (decision, disconnected) = policy.refused(
            now: Timestamps.monotonicNanoseconds(),
            samples: { connections?.samples(side: .subscriber) ?? [:] },
            disconnect: { disconnectStalledSubscriber($0, unsentBytes: $1) })
        budgetPolicy = policy
        switch decision {
        case .retry(let waitBegan):
            if waitBegan { stats.subscriberWaits += 1 }
            return frames > 0 || disconnected > 0
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

    /// Ten times a second: disconnects the subscribers past their budget that take nothing
    /// (`SubscriberStallWatch`, and `SubscriberBacklogWatch`'s estimate of what is held for each).
    /// Nobody waited for them. (A binding publisher does not hold back for one past its budget
    /// that moves: its queue is bounded by the mark, as before.)
    func disconnectSubscribersPastBudget() {
        guard budgetPolicy != nil, let connections = sockets.subscriberConnections else { return }
        let now = Timestamps.monotonicNanoseconds()
        // Every byte sent: the loop's, and the posts posting threads sent themselves.
        let sent = posts.bytesSent &+ core.mailbox.withLock { $0.lending.sentBytes }
        guard budgetPolicy?.lookIsDue(now: now, wireSent: sent) == true else { return }
        do { try sockets.readAcceptEvents() } catch { record(error, "reading connection events") }
        let samples = connections.samples(side: .subscriber, onlyBehind: true)
        guard var policy = budgetPolicy else { return }
        let outcome = policy.look(samples, sent: sent, wireSent: sent, now: now) { descriptor, unsent, _ in
            disconnectStalledSubscriber(descriptor, unsentBytes: unsent)
        }
        budgetPolicy = policy
        if outcome.stalledDisconnected > 0 { publishStats() }
    }

    /// Ends a subscriber's connection (libzmq drops its queue; it reconnects and counts the gap),
    /// counts and logs it, and has the close wait for it to come back for the end of stream.
    /// False when the descriptor was already gone.
    private func disconnectStalledSubscriber(_ descriptor: ConnectionDescriptor, unsentBytes: Int) -> Bool {
        guard descriptor.shutDown() else { return false }
        stats.stalledSubscribersDisconnected += 1
        // Its subscriptions end in a moment: those are a lost connection's, waited for at close
        // so that when it comes back the end of stream tells it its tail.
        publisherSide.connectionLost(wallClock: Timestamps.wallClockNanoseconds())
        let connection = sockets.subscriberConnections?.connection(side: .subscriber, descriptor: descriptor.rawValue)
        configuration.logger?.warning(
            "\(BrokerEvent.stalledSubscriberDisconnected(connection, unsentBytes: unsentBytes))", metadata: ["side": "publisher"])
        return true
    }

    /// While subscribers are connected, the loop wakes at least this often (ms) to watch them.
    var budgetWatchTimeout: Int? {
        guard budgetPolicy != nil, let connections = sockets.subscriberConnections, connections.open.load(ordering: .relaxed) > 0
        else { return nil }
        return Int(SubscriberBudgetPolicy.checkInterval / 1_000_000)
    }
}
