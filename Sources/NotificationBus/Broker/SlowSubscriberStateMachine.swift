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
/// Socket-free: the broker's loop feeds it the outcome of each send and the time, and does what
/// it returns. Times are monotonic nanoseconds; deadlines saturate instead of wrapping.
struct SlowSubscriberStateMachine {
    /// How long a refusal may last before the subscriber behind it is declared slow.
    let patienceNanoseconds: UInt64
    /// How long an episode must go without a refusal to end.
    let quietNanoseconds: UInt64

    enum State: Equatable {
        /// Every message goes to every subscriber.
        case flowing
        /// The backend refused the held message first at `since`; waiting for room.
        case waiting(since: UInt64)
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
    }

    /// What ended, if anything, when a message was taken whole.
    enum AcceptedOutcome: Equatable {
        case nothing
        /// A slow episode ended after `duration` nanoseconds, with `sentPast` messages sent past full queues.
        case episodeEnded(duration: UInt64, sentPast: UInt64)
    }

    init(patienceNanoseconds: UInt64, quietNanoseconds: UInt64 = 10_000_000_000) {
        self.patienceNanoseconds = patienceNanoseconds
        self.quietNanoseconds = quietNanoseconds
    }

    /// The backend refused the message held since the last call.
    mutating func refused(now: UInt64) -> RefusalAction {
        switch state {
        case .flowing:
            guard patienceNanoseconds > 0 else {
                state = .slow(since: now, sentPast: 1, lastRefusal: now)
                return .sendPast(episodeStarted: true, since: now)
            }
            state = .waiting(since: now)
            return .retry(deadline: Self.adding(now, patienceNanoseconds))
        case .waiting(let since):
            let deadline = Self.adding(since, patienceNanoseconds)
            guard now >= deadline else { return .retry(deadline: deadline) }
            state = .slow(since: since, sentPast: 1, lastRefusal: now)
            return .sendPast(episodeStarted: true, since: since)
        case .slow(let since, let sentPast, _):
            state = .slow(since: since, sentPast: sentPast &+ 1, lastRefusal: now)
            return .sendPast(episodeStarted: false, since: since)
        }
    }

    /// The backend took a message whole (every subscriber it still sends to had room).
    mutating func accepted(now: UInt64) -> AcceptedOutcome {
        switch state {
        case .flowing:
            return .nothing
        case .waiting:
            state = .flowing
            return .nothing
        case .slow(let since, let sentPast, let lastRefusal):
            guard now >= Self.adding(lastRefusal, quietNanoseconds) else { return .nothing }
            state = .flowing
            return .episodeEnded(duration: now &- since, sentPast: sentPast)
        }
    }

    /// `start + span`, saturating: a huge patience never wraps to a small deadline.
    private static func adding(_ start: UInt64, _ span: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(span)
        return overflow ? .max : sum
    }
}
