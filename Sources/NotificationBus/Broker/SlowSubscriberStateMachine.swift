/// What the broker does when its backend refuses a message because a subscriber's queue is full.
///
/// The broker's backend is an XPUB with `ZMQ_XPUB_NODROP`: a message goes to every matching
/// subscriber or, while one of them has no room, to none (`wouldBlock`). A subscriber that is
/// merely behind makes room within milliseconds; meanwhile the broker stops reading its
/// frontend, so publishers (which wait for the broker by default) slow to the pace the
/// subscribers keep, and nothing is lost. A subscriber that makes no room for `patience`
/// (stopped, frozen, or reading far slower than the others for that long) is *slow*: from then on a
/// refused message is sent past it (`ZMQ_XPUB_NODROP` off for that one send), so the full
/// queues lose it and every other subscriber gets it at once. The first message the backend
/// takes whole again ends the episode. Subscribers count what they lost by sequence number.
///
/// Socket-free: the broker's loop feeds it the outcome of each send and the time, and does what
/// it returns. Times are monotonic nanoseconds.
struct SlowSubscriberStateMachine {
    /// How long a refusal may last before the subscriber behind it is declared slow.
    let patienceNanoseconds: UInt64

    enum State: Equatable {
        /// Every message goes to every subscriber.
        case flowing
        /// The backend refused the held message first at `since`; waiting for room.
        case waiting(since: UInt64)
        /// A slow-subscriber episode that started at `since`: `sentPast` messages so far went
        /// past at least one full subscriber.
        case slow(since: UInt64, sentPast: UInt64)
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

    init(patienceNanoseconds: UInt64) {
        self.patienceNanoseconds = patienceNanoseconds
    }

    /// The backend refused the message held since the last call.
    mutating func refused(now: UInt64) -> RefusalAction {
        switch state {
        case .flowing:
            guard patienceNanoseconds > 0 else {
                state = .slow(since: now, sentPast: 1)
                return .sendPast(episodeStarted: true, since: now)
            }
            state = .waiting(since: now)
            return .retry(deadline: deadline(from: now))
        case .waiting(let since):
            let deadline = deadline(from: since)
            guard now >= deadline else { return .retry(deadline: deadline) }
            state = .slow(since: since, sentPast: 1)
            return .sendPast(episodeStarted: true, since: since)
        case .slow(let since, let sentPast):
            state = .slow(since: since, sentPast: sentPast &+ 1)
            return .sendPast(episodeStarted: false, since: since)
        }
    }

    /// When a wait that started at `start` runs out (saturating: a huge patience never wraps).
    private func deadline(from start: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(patienceNanoseconds)
        return overflow ? .max : sum
    }

    /// The backend took a message whole (every matching subscriber had room).
    mutating func accepted(now: UInt64) -> AcceptedOutcome {
        switch state {
        case .flowing:
            return .nothing
        case .waiting:
            state = .flowing
            return .nothing
        case .slow(let since, let sentPast):
            state = .flowing
            return .episodeEnded(duration: now &- since, sentPast: sentPast)
        }
    }
}
