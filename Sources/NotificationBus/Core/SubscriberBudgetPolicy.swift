import ZeroMQ

/// A per-subscriber byte budget kept by a sender whose peers are the subscribers themselves, and
/// which sends with `ZMQ_XPUB_NODROP`: a publisher that binds (direct topology). The same three
/// parts as the broker's forwarder (`BrokerForwarder`), put together once:
///
/// - `SubscriberStallWatch` (the budget's byte side): looked at ten times a second, it names the
///   connections that took nothing for the patience while more than the budget was sent. They are
///   disconnected; nobody waited for them.
/// - `SlowSubscriberStateMachine` with `disconnectsStalled` (the mark's side): when the socket
///   refuses a frame (a queue at its mark), the sender holds it and its posters wait (flow
///   control) up to the patience; then the connections that took nothing since the wait began
///   (`StalledConnectionFinder`) are disconnected and the wait begins again for the rest; one
///   that is slow but moving is waited for, up to the longest hold, before frames go past it.
///
/// Socket-free, clock as input: the caller gives the connections' samples and a way to end one
/// (`disconnect` says whether it did: libzmq may have closed the descriptor already), and does
/// what `refused` returns.
struct SubscriberBudgetPolicy {
    private(set) var machine: SlowSubscriberStateMachine
    private var finder = StalledConnectionFinder()
    private var watch: SubscriberStallWatch
    /// A refused frame is being held (since the last `accepted`).
    private(set) var waiting = false
    /// When the connections are sampled for the watch next (monotonic ns).
    private var nextCheck: UInt64 = 0

    /// How often the watch looks: 10 times a second, so a stopped subscriber's queue passes its
    /// budget by at most a tenth of a second of traffic (the broker's `stallCheckInterval`).
    static let checkInterval: UInt64 = 100_000_000

    /// A budget of `budget` bytes per subscriber and a patience of `patienceNanoseconds`; the
    /// quiet spell that ends a slow episode and the longest hold for a moving subscriber are the
    /// broker's: 20 patiences, at least 10 s.
    init(budget: Int, patienceNanoseconds: UInt64) {
        let quiet = max(10_000_000_000, patienceNanoseconds.multipliedReportingOverflow(by: 20).partialValue)
        machine = SlowSubscriberStateMachine(
            patienceNanoseconds: patienceNanoseconds, quietNanoseconds: quiet, disconnectsStalled: budget > 0,
            maximumHoldNanoseconds: quiet)
        watch = SubscriberStallWatch(budget: budget, patienceNanoseconds: patienceNanoseconds)
    }

    /// What to do with the refused frame.
    enum Decision: Equatable {
        /// Hold it and try again (the posters wait). `waitBegan`: a new wait (count it).
        case retry(waitBegan: Bool)
        /// Send it past the full queues (`ZMQ_XPUB_NODROP` off for that one frame). `episodeStarted`:
        /// the first of a slow episode (log it), whose refusals began at `since`.
        case sendPast(episodeStarted: Bool, since: UInt64)
    }

    /// The socket refused the frame at the head of the queue at `now`. May disconnect stalled
    /// connections (through `disconnect`) before it decides; returns the decision and how many
    /// it disconnected.
    mutating func refused(
        now: UInt64, samples: () -> [ConnectionDescriptor: ConnectionSample],
        disconnect: (ConnectionDescriptor, _ unsentBytes: Int) -> Bool
    ) -> (decision: Decision, disconnected: Int) {
        var action = machine.refused(now: now)
        var disconnected = 0
        var restarted = false
        if case .findStalled = action {
            let current = samples()
            for descriptor in finder.stalled(current) where disconnect(descriptor, current[descriptor]?.unsentBytes ?? 0) {
                watch.forget(descriptor)
                disconnected += 1
            }
            action = machine.stalledFound(disconnected: disconnected, moving: finder.moving(current).count, now: now)
            restarted = true
        }
        switch action {
        case .retry:
            // A wait begins (or begins again without the ones just disconnected): what each
            // connection holds now is what it must have moved from by the deadline.
            let began = !waiting
            if machine.disconnectsStalled && (began || restarted) { finder.begin(samples()) }
            waiting = true
            return (.retry(waitBegan: began), disconnected)
        case .sendPast(let episodeStarted, let since):
            waiting = false
            return (.sendPast(episodeStarted: episodeStarted, since: since), disconnected)
        case .findStalled:
            // `stalledFound` never asks again; should it, the frame is held and asked about next time.
            return (.retry(waitBegan: false), disconnected)
        }
    }

    /// The socket took a frame whole at `now`: the wait, if any, is over. Says when a slow
    /// episode ended.
    mutating func accepted(now: UInt64) -> SlowSubscriberStateMachine.AcceptedOutcome {
        waiting = false
        return machine.accepted(now: now)
    }

    /// Whether the watch is due at `now` (then it is not due again for `checkInterval`).
    mutating func watchIsDue(now: UInt64) -> Bool {
        guard watch.budget > 0, now >= nextCheck else { return false }
        nextCheck = now &+ Self.checkInterval
        return true
    }

    /// The watch's look at `now`, `sent` bytes sent in all so far: disconnects (through
    /// `disconnect`) the connections past their budget; returns how many it did.
    mutating func disconnectPastBudget(
        _ samples: [ConnectionDescriptor: ConnectionSample], sent: UInt64, now: UInt64,
        disconnect: (ConnectionDescriptor, _ unsentBytes: Int) -> Bool
    ) -> Int {
        var disconnected = 0
        for descriptor in watch.observe(samples, forwarded: sent, now: now)
        where disconnect(descriptor, samples[descriptor]?.unsentBytes ?? 0) {
            watch.forget(descriptor)
            disconnected += 1
        }
        return disconnected
    }
}
