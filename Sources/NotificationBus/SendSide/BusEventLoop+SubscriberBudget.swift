import Logging
import ZeroMQ

/// A binding publisher's per-subscriber budget (`BusConfiguration.subscriberBudget`), kept by the
/// broker's own `SubscriberBudgetSide`: its XPUB sends with `ZMQ_XPUB_NODROP`, and
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
        guard let budgetSide else { return .max }
        return budgetSide.policy.allowance(wireSent: wireBytesSent)
    }

    /// Whether the loop holds back (sends nothing new) for a subscriber past its budget.
    var holdsForSubscriberBudget: Bool { budgetAllowance == 0 }

    /// The single-path, non-loopback send with the budget kept: looks at the subscribers first
    /// when the bytes sent could have put one past its budget, sends nothing new while one past it
    /// moves, at most the headroom otherwise; then hands a refusal to the budget's side and does
    /// what it says. Returns whether anything went (or a subscriber was disconnected).
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
        guard posts.hasUnsent, posts.bytesSent &- before < allowance, var side = budgetSide else {
            return frames > 0 || looked > 0
        }
        var disconnected = 0
        let decision = side.refused(now: Timestamps.monotonicNanoseconds()) { event in
            if event.isSubscriberDisconnection { disconnected += 1 }
            reportBudgetEvent(event)
        }
        budgetSide = side
        copyBudgetCounters()
        switch decision {
        case .retry:
            return frames > 0 || disconnected > 0 || looked > 0
        case .sendPast:
            return sendOnePast(on: publisher) || frames > 0
        }
    }

    /// The next frame goes past the full queues (`SubscriberBudgetSide.sendPast`): libzmq drops
    /// it for them (their subscribers count it as a gap) and everybody else gets it.
    private func sendOnePast(on publisher: Socket) -> Bool {
        let before = posts.counters.sent
        do {
            let frames = try SubscriberBudgetSide.sendPast(on: publisher) { () throws(ZMQError) in
                posts.send(
                    on: publisher, mode: .dontWait, maximumFrames: 1, stopped: { contextTerminated },
                    failed: { record($0, "sending a notification past a full subscriber") })
            }
            budgetSide?.sentPast(posts.counters.sent &- before)
            copyBudgetCounters()
            return frames > 0
        } catch {
            record(error, "switching ZMQ_XPUB_NODROP")
            return false
        }
    }

    /// Frames went whole: a wait is over; a slow episode may end (logged).
    func framesAccepted() {
        guard let event = budgetSide?.accepted(now: Timestamps.monotonicNanoseconds()) else { return }
        reportBudgetEvent(event)
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
        guard var side = budgetSide else { return 0 }
        let now = Timestamps.monotonicNanoseconds()
        let sent = wireBytesSent
        guard side.policy.lookIsDue(now: now, wireSent: sent) else { return 0 }
        do { try sockets.readAcceptEvents() } catch { record(error, "reading connection events") }
        let before = side.counters
        // The stall watch's byte count is the wire bytes too (it only compares them with the budget).
        let ended = side.lookIfDue(now: now, sent: sent, wireSent: sent) { reportBudgetEvent($0) } ?? 0
        budgetSide = side
        if side.counters != before {
            copyBudgetCounters()
            publishStats()
        }
        return ended
    }

    /// The budget side's counters into `stats`.
    private func copyBudgetCounters() {
        guard let counters = budgetSide?.counters else { return }
        stats.subscriberWaits = counters.waits
        stats.slowSubscriberEpisodes = counters.slowEpisodes
        stats.sentPastSlowSubscribers = counters.sentPast
        stats.stalledSubscribersDisconnected = counters.stalledDisconnected
        stats.slowSubscribersDisconnected = counters.slowDisconnected
    }

    /// Logs a budget event as the broker does, as the publisher side. A disconnected subscriber's
    /// subscriptions end in a moment: those are a lost connection's, waited for at close so that
    /// when it comes back the end of stream tells it its tail.
    private func reportBudgetEvent(_ event: BrokerEvent) {
        if event.isSubscriberDisconnection {
            publisherSide.connectionLost(wallClock: Timestamps.wallClockNanoseconds())
        }
        if var logger = configuration.logger {
            logger[metadataKey: "side"] = "publisher"
            event.log(to: logger)
        }
    }

    /// While subscribers are connected, the loop wakes at least this often (ms) to watch them;
    /// while it holds back for one past its budget, every 2 ms (it lends the XPUB to nobody then,
    /// so nothing else would wake it when that one is back within its budget).
    var budgetWatchTimeout: Int? {
        guard budgetSide != nil else { return nil }
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
