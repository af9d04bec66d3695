/// What the broker does when its backend refuses a message because a subscriber's queue is full.
///
/// The broker's backend is an XPUB with `ZMQ_XPUB_NODROP`: a message goes to every matching
/// subscriber or, while one of them has no room, to none (`wouldBlock`). A subscriber that is
/// merely behind makes room within milliseconds; meanwhile the broker stops reading its
/// frontend, so publishers (which wait for the broker by default) slow to the pace the
/// subscribers keep, and nothing is lost. A subscriber that makes no room for `patience`
/// (stopped, frozen, or reading far slower than the others for that long) is *slow*: from then on
/// a refused message is sent past it at once (`ZMQ_XPUB_NODROP` off for that one send), so the
/// full queues lose it and every other subscriber gets it.
///
/// The episode ends only after `quiet` without any refusal. libzmq takes a pipe that failed a
/// write out of its send list until its reader has consumed a low-water mark's worth (the mark
/// minus 1,024 messages), so right after a message goes past, the next ones are accepted (the
/// slow subscriber silently misses them) and the subscriber comes back, full again, only later:
/// ending at the first accepted message would make every such cycle cost the publishers a new
/// wait of `patience`. The broker cannot tell which subscriber is slow nor count its losses; the
/// subscribers count them by sequence number.
///
/// With `disconnectsStalled` (the broker's, with a subscriber budget), the patience running out
/// first asks the loop to look at the subscribers (`findStalled`): it disconnects those that took
/// nothing at all during the wait (stopped, frozen) and says how many, and how many others held
/// unsent bytes but took some (`stalledFound`). Disconnected ones are gone from the backend (they
/// reconnect and count the gap), so a new wait begins for the rest. A subscriber that is slow but
/// moving is not sent past: the publishers go on waiting for it (flow control: it loses nothing),
/// patience after patience, up to `maximumHold` since the refusals began; only then, or when
/// nothing can be said of any subscriber, does the episode start.
///
/// Socket-free: the broker's loop feeds it the outcome of each send and the time, and does what
/// it returns. Times are monotonic nanoseconds; deadlines saturate instead of wrapping.
struct SlowSubscriberStateMachine {
    /// How long a refusal may last before the subscriber behind it is declared slow (or, with
    /// `disconnectsStalled`, before the subscribers are looked at).
    let patienceNanoseconds: UInt64
    /// How long an episode must go without a refusal to end.
    let quietNanoseconds: UInt64
    /// Whether the patience running out first looks for stalled subscribers to disconnect.
    let disconnectsStalled: Bool
    /// With `disconnectsStalled`: the longest the publishers wait for subscribers that are slow but
    /// moving before the episode starts anyway.
    let maximumHoldNanoseconds: UInt64

    enum State: Equatable {
        /// Every message goes to every subscriber.
        case flowing
        /// The backend refused the held message at `since`, the refusals having begun at
        /// `heldSince`; waiting for room.
        case waiting(since: UInt64, heldSince: UInt64)
        /// A patience ran out on refusals that began at `heldSince`; the loop is looking at the
        /// subscribers.
        case finding(heldSince: UInt64)
        /// A slow-subscriber episode that started at `since`, last refused at `lastRefusal`:
        /// `sentPast` messages so far went past at least one full subscriber.
        case slow(since: UInt64, sentPast: UInt64, lastRefusal: UInt64)
    }

    private(set) var state = State.flowing

    /// What to do with a message the backend refused.
    enum RefusalAction: Equatable {
        /// Keep holding it, stop reading publishers, and try again (no later than the deadline).
        case retry(deadline: UInt64)
        /// Send it past the full subscribers. `episodeStarted`: this is the first of a slow
        /// episode (log it); the subscriber was refused since `since`.
        case sendPast(episodeStarted: Bool, since: UInt64)
        /// A patience ran out on refusals that began at `heldSince`: disconnect the subscribers
        /// that took nothing during this wait, and answer with `stalledFound`.
        case findStalled(heldSince: UInt64)
    }

    /// What ended, if anything, when a message was taken whole.
    enum AcceptedOutcome: Equatable {
        case nothing
        /// A slow episode ended after `duration` nanoseconds, with `sentPast` messages sent past full queues.
        case episodeEnded(duration: UInt64, sentPast: UInt64)
    }

    init(
        patienceNanoseconds: UInt64, quietNanoseconds: UInt64 = 10_000_000_000, disconnectsStalled: Bool = false,
        maximumHoldNanoseconds: UInt64 = 10_000_000_000
    ) {
        self.patienceNanoseconds = patienceNanoseconds
        self.quietNanoseconds = quietNanoseconds
        self.disconnectsStalled = disconnectsStalled
        self.maximumHoldNanoseconds = maximumHoldNanoseconds
    }

    /// The backend refused the message held since the last call.
    mutating func refused(now: UInt64) -> RefusalAction {
        switch state {
        case .flowing:
            guard patienceNanoseconds > 0 else {
                state = .slow(since: now, sentPast: 1, lastRefusal: now)
                return .sendPast(episodeStarted: true, since: now)
            }
            state = .waiting(since: now, heldSince: now)
            return .retry(deadline: Self.adding(now, patienceNanoseconds))
        case .waiting(let since, let heldSince):
            var deadline = Self.adding(since, patienceNanoseconds)
            if disconnectsStalled { deadline = min(deadline, Self.adding(heldSince, maximumHoldNanoseconds)) }
            guard now >= deadline else { return .retry(deadline: deadline) }
            if disconnectsStalled {
                state = .finding(heldSince: heldSince)
                return .findStalled(heldSince: heldSince)
            }
            return startEpisode(since: heldSince, now: now)
        case .finding:
            // The loop refused again before answering `findStalled`: nothing was found.
            return stalledFound(disconnected: 0, moving: 0, now: now)
        case .slow(let since, let sentPast, _):
            state = .slow(since: since, sentPast: sentPast &+ 1, lastRefusal: now)
            return .sendPast(episodeStarted: false, since: since)
        }
    }

    /// The answer to `findStalled`: `disconnected` subscribers took nothing and were disconnected,
    /// `moving` others held unsent bytes and took some. Disconnected ones: a new wait for the rest.
    /// Moving ones: wait on for them, up to `maximumHold` since the refusals began. Neither, or
    /// held that long: the episode starts.
    mutating func stalledFound(disconnected: Int, moving: Int, now: UInt64) -> RefusalAction {
        guard case .finding(let heldSince) = state else {
            // Not asked (a stray answer): nothing changes; a refusal comes next.
            return refused(now: now)
        }
        if disconnected > 0 {
            state = .waiting(since: now, heldSince: now)
            return .retry(deadline: Self.adding(now, patienceNanoseconds))
        }
        let holdEnds = Self.adding(heldSince, maximumHoldNanoseconds)
        if moving > 0, now < holdEnds {
            state = .waiting(since: now, heldSince: heldSince)
            return .retry(deadline: min(Self.adding(now, patienceNanoseconds), holdEnds))
        }
        return startEpisode(since: heldSince, now: now)
    }

    /// The backend took a message whole (every subscriber it still sends to had room).
    mutating func accepted(now: UInt64) -> AcceptedOutcome {
        switch state {
        case .flowing:
            return .nothing
        case .waiting, .finding:
            state = .flowing
            return .nothing
        case .slow(let since, let sentPast, let lastRefusal):
            guard now >= Self.adding(lastRefusal, quietNanoseconds) else { return .nothing }
            state = .flowing
            return .episodeEnded(duration: now &- since, sentPast: sentPast)
        }
    }

    private mutating func startEpisode(since: UInt64, now: UInt64) -> RefusalAction {
        state = .slow(since: since, sentPast: 1, lastRefusal: now)
        return .sendPast(episodeStarted: true, since: since)
    }

    /// `start + span`, saturating: a huge patience never wraps to a small deadline.
    private static func adding(_ start: UInt64, _ span: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(span)
        return overflow ? .max : sum
    }
}
