import NotificationBus

/// Counter changes a feed transition produces, applied to the view's metrics outside the lock.
struct FeedMetricsDelta {
    var received: UInt64 = 0
    var handled: UInt64 = 0
    var filtered: UInt64 = 0
    var missed: UInt64 = 0
    var replayed: UInt64 = 0
    var gaps: UInt64 = 0

    var isEmpty: Bool { received == 0 && handled == 0 && filtered == 0 && missed == 0 && replayed == 0 && gaps == 0 }

    func adding(_ other: FeedMetricsDelta) -> FeedMetricsDelta {
        FeedMetricsDelta(
            received: received + other.received, handled: handled + other.handled, filtered: filtered + other.filtered,
            missed: missed + other.missed, replayed: replayed + other.replayed, gaps: gaps + other.gaps)
    }
}

/// The state of a task-style consumer's subscription: live while its view is visible (one session
/// per task run), keeping per the replay policy while hidden, ended when the view is destroyed.
///
/// Pure state: every transition returns what to resume; `ViewFeedStorage` runs it outside the lock.
struct ViewFeedStateMachine {
    enum Phase: Equatable {
        case hidden
        case visible
        case ended
    }

    /// One queued event, whether it was kept while hidden (counted as replayed when taken), and
    /// whether it came from the bus while visible (what `capacity` bounds).
    struct Queued {
        var event: BusEvent
        var isReplay: Bool
        var fromBus = false
    }

    enum ReceiveAction {
        /// Hand the event to the waiting consumer.
        case resume(UnsafeContinuation<BusEvent?, Never>, BusEvent, FeedMetricsDelta)
        /// Queued for the running consumer.
        case queued
        /// Kept or counted while hidden, or dropped after the end.
        case handledWhileInactive(FeedMetricsDelta)
    }

    enum NextAction {
        case event(BusEvent, resumeProducer: Bool, FeedMetricsDelta)
        case end(FeedMetricsDelta)
        case suspended(FeedMetricsDelta)
    }

    let replay: ReplayPolicy
    let capacity: Int
    private(set) var phase = Phase.hidden
    private(set) var session: UInt64 = 0
    private var live = FIFO<Queued>()
    /// Events in `live` that came from the bus while visible: the back-pressure bound applies to
    /// these, not to the gaps and kept notifications put in front on reappear.
    private var queuedFromBus = 0
    private var consumer: (session: UInt64, continuation: UnsafeContinuation<BusEvent?, Never>)?
    /// The bus was told this feed is full and stopped reading; tell it when there is room again.
    private var producerWaiting = false
    private var sourceEnded = false
    /// Notifications kept while hidden (one per name for `.latest`, up to max for `.all`).
    private var kept: [BusNotification] = []
    /// Misses since the view was last shown, reported as one gap on reappear.
    private var missedSinceShown: UInt64 = 0
    /// Upstream losses reported while hidden, reported as one gap on reappear.
    private var lostUpstreamWhileHidden: UInt64 = 0
    /// The notification the consumer is handling: its publish time and whether state changed since.
    private var handling: (timestamp: UInt64, updatedState: Bool)?

    init(replay: ReplayPolicy, capacity: Int) {
        self.replay = replay
        self.capacity = max(1, capacity)
    }

    // MARK: From the bus (its I/O thread)

    mutating func receive(_ event: BusEvent) -> ReceiveAction {
        switch phase {
        case .ended:
            return .handledWhileInactive(FeedMetricsDelta())
        case .hidden:
            return .handledWhileInactive(keepWhileHidden(event))
        case .visible:
            if live.isEmpty, let waiting = consumer, waiting.session == session {
                consumer = nil
                var delta = FeedMetricsDelta()
                take(Queued(event: event, isReplay: false), into: &delta)
                return .resume(waiting.continuation, event, delta)
            }
            live.append(Queued(event: event, isReplay: false, fromBus: true))
            queuedFromBus += 1
            return .queued
        }
    }

    /// The bus asks whether it may go on: not while a visible consumer's queue is full (the bus
    /// then waits to be told, see `resumeProducer`).
    mutating func isFullForProducer() -> Bool {
        guard phase == .visible && queuedFromBus >= capacity else { return false }
        producerWaiting = true
        return true
    }

    /// The subscription ended (bus closed): the consumer drains what is queued, then ends.
    mutating func sourceDidEnd() -> UnsafeContinuation<BusEvent?, Never>? {
        sourceEnded = true
        guard live.isEmpty, let waiting = consumer else { return nil }
        consumer = nil
        return waiting.continuation
    }

    // MARK: From the consumer

    mutating func next(session asking: UInt64, _ continuation: UnsafeContinuation<BusEvent?, Never>) -> NextAction {
        // An earlier run's loop asking once more after a restart: the notification being handled
        // now is the new run's, not its to close out.
        guard asking == session else { return .end(FeedMetricsDelta()) }
        var delta = finishHandling()
        guard phase == .visible else { return .end(delta) }
        if let queued = live.popFirst() {
            if queued.fromBus { queuedFromBus -= 1 }
            take(queued, into: &delta)
            let resumeProducer = producerWaiting && queuedFromBus < capacity
            if resumeProducer { producerWaiting = false }
            return .event(queued.event, resumeProducer: resumeProducer, delta)
        }
        if sourceEnded { return .end(delta) }
        consumer = (asking, continuation)
        return .suspended(delta)
    }

    /// The consumer's task was cancelled while waiting: end its loop.
    mutating func cancelWaiting(session asking: UInt64) -> UnsafeContinuation<BusEvent?, Never>? {
        guard let waiting = consumer, waiting.session == asking else { return nil }
        consumer = nil
        return waiting.continuation
    }

    /// State changed while the consumer was handling a notification: returns that notification's
    /// publish time the first time (for the latency histogram), nil otherwise.
    mutating func noteStateUpdate() -> UInt64? {
        guard let current = handling, !current.updatedState else { return nil }
        handling = (current.timestamp, true)
        return current.timestamp
    }

    // MARK: From the view's lifecycle

    /// The view appeared (or its task restarted): a new session gets the gaps and kept notifications first.
    mutating func activate() -> UInt64 {
        guard phase != .ended else { return session }
        session &+= 1
        phase = .visible
        var front: [Queued] = []
        if lostUpstreamWhileHidden > 0 {
            front.append(Queued(event: .gap(Gap(cause: .lostUpstream, count: lostUpstreamWhileHidden)), isReplay: false))
        }
        if missedSinceShown > 0 {
            front.append(Queued(event: .gap(Gap(cause: .missedWhileInactive, count: missedSinceShown)), isReplay: false))
        }
        for notification in kept { front.append(Queued(event: .notification(notification), isReplay: true)) }
        live = FIFO(front + live.elements)
        kept.removeAll()
        missedSinceShown = 0
        lostUpstreamWhileHidden = 0
        return session
    }

    /// The task restarts while the view stays visible: the old run's loop ends, the new session
    /// takes over what is queued.
    mutating func restart() -> (UInt64, UnsafeContinuation<BusEvent?, Never>?, FeedMetricsDelta) {
        guard phase == .visible else { return (activate(), nil, FeedMetricsDelta()) }
        let delta = finishHandling()
        session &+= 1
        let waiting = consumer?.continuation
        consumer = nil
        return (session, waiting, delta)
    }

    /// The task run of `asking` returned while its view is still visible (its loop ended early):
    /// like a disappearance, what comes until the view shows again is kept or counted per the
    /// replay policy, instead of queueing for nobody (which would hold the bus back).
    mutating func runFinished(session asking: UInt64)
        -> (UnsafeContinuation<BusEvent?, Never>?, resumeProducer: Bool, FeedMetricsDelta)
    {
        guard phase == .visible, asking == session else { return (nil, false, FeedMetricsDelta()) }
        return deactivate()
    }

    /// The view disappeared: ends the session; what it had not taken is
    /// kept or counted per the replay policy. Returns who to resume and the counter changes.
    mutating func deactivate() -> (UnsafeContinuation<BusEvent?, Never>?, resumeProducer: Bool, FeedMetricsDelta) {
        guard phase == .visible else { return (nil, false, FeedMetricsDelta()) }
        phase = .hidden
        var delta = finishHandling()
        let untaken = live.elements
        live.removeAll()
        queuedFromBus = 0
        for queued in untaken {
            switch queued.event {
            case .notification(let notification):
                delta.missed += keep(notification)
            case .gap(let gap) where gap.cause == .missedWhileInactive:
                missedSinceShown += gap.count
            case .gap(let gap):
                lostUpstreamWhileHidden += gap.count
            }
        }
        let waiting = consumer?.continuation
        consumer = nil
        defer { producerWaiting = false }
        return (waiting, producerWaiting, delta)
    }

    /// The view was destroyed: nothing more is delivered or kept; what was queued or kept and
    /// never taken is counted as missed.
    mutating func end() -> (UnsafeContinuation<BusEvent?, Never>?, resumeProducer: Bool, FeedMetricsDelta) {
        var delta = phase == .visible ? finishHandling() : FeedMetricsDelta()
        if phase != .ended {
            let queued = live.elements.reduce(UInt64(0)) { count, queued in
                if case .notification = queued.event { return count + 1 }
                return count
            }
            delta.missed += queued + UInt64(kept.count)
        }
        phase = .ended
        live.removeAll()
        queuedFromBus = 0
        kept.removeAll()
        let waiting = consumer?.continuation
        consumer = nil
        defer { producerWaiting = false }
        return (waiting, producerWaiting, delta)
    }

    // MARK: Private

    private mutating func take(_ queued: Queued, into delta: inout FeedMetricsDelta) {
        switch queued.event {
        case .notification(let notification):
            delta.handled += 1
            if queued.isReplay { delta.replayed += 1 }
            handling = (notification.timestamp, false)
        case .gap:
            delta.gaps += 1
            handling = nil
        }
    }

    /// Closes the handling of the previous notification: filtered when it changed no state.
    private mutating func finishHandling() -> FeedMetricsDelta {
        var delta = FeedMetricsDelta()
        if let current = handling, !current.updatedState { delta.filtered = 1 }
        handling = nil
        return delta
    }

    private mutating func keepWhileHidden(_ event: BusEvent) -> FeedMetricsDelta {
        var delta = FeedMetricsDelta()
        switch event {
        case .notification(let notification):
            delta.missed = keep(notification)
        case .gap(let gap):
            lostUpstreamWhileHidden += gap.count
        }
        return delta
    }

    /// Keeps `notification` as its name's latest, replacing (and counting as missed) an earlier one.
    private mutating func keepLatest(_ notification: BusNotification) -> UInt64 {
        var missed: UInt64 = 0
        if let index = kept.firstIndex(where: { $0.name == notification.name }) {
            kept.remove(at: index)
            missed = 1
        }
        kept.append(notification)
        missedSinceShown += missed
        return missed
    }

    /// Keeps `notification` per the replay policy; returns how many notifications were missed by it.
    /// A retained one (a name's current value, `start: .retained`) is kept whatever the policy,
    /// the latest per name: the view that appears shows it. Its snapshot can arrive before the
    /// view's task first runs (1 run in 25 at load, RetainedStartTests), and `.none` dropped it.
    private mutating func keep(_ notification: BusNotification) -> UInt64 {
        if notification.isRetained { return keepLatest(notification) }
        switch replay {
        case .none:
            missedSinceShown += 1
            return 1
        case .latest:
            return keepLatest(notification)
        case .all(let maximum):
            kept.append(notification)
            var missed: UInt64 = 0
            while kept.count > max(0, maximum) {
                kept.removeFirst()
                missed += 1
            }
            missedSinceShown += missed
            return missed
        }
    }
}
