import ZeroMQ

/// A per-subscriber byte budget kept by a sender whose peers are the subscribers themselves, and
/// which sends with `ZMQ_XPUB_NODROP`: the broker's forwarder (`BrokerForwarder`) and a publisher
/// that binds (direct topology). Four parts, put together once:
///
/// - `SubscriberStallWatch` (the budget's byte side for one that stops): looked at ten times a second, it names the
///   connections that took nothing for the patience while more than the budget was sent. They are
///   disconnected; nobody waited for them.
/// - `SlowSubscriberStateMachine` with `disconnectsStalled` (the mark's side): when the socket
///   refuses a frame (a queue at its mark), the sender holds it and its posters wait (flow
///   control) up to the patience; then the connections that took nothing since the wait began
///   (`StalledConnectionFinder`) are disconnected and the wait begins again for the rest; one
///   that is slow but moving is waited for, up to the longest hold, before frames go past it.
/// - `SubscriberBacklogWatch` (the budget's byte side for one that moves): the bytes held for each
///   connection, estimated at each look; while one past its budget is moving, nothing new is sent
///   (the posters wait) until it is back within it, looked at every 2 ms, and at once when the
///   bytes sent since the last look could have put one past it; one past it for the longest hold
///   is disconnected (slow).
///
/// Socket-free, clock as input: every input returns an action (`RefusalAction`, `LookActions`)
/// that the sender's `SubscriberBudgetSide` carries out against the connections, telling the
/// policy what happened (`beginWait`, `ended`, `stalledFound`).
struct SubscriberBudgetPolicy {
    private(set) var machine: SlowSubscriberStateMachine
    private var finder = StalledConnectionFinder()
    private var watch: SubscriberStallWatch
    /// A refused frame is being held (since the last `accepted`).
    private(set) var waiting = false
    /// The moving side of the budget: holds for a subscriber past it while it moves.
    private var backlog: SubscriberBacklogWatch
    /// A subscriber past its budget is moving: the sender sends nothing new until it is within.
    private(set) var holdingForBacklog = false
    /// Holding because a subscriber past its budget moves (a wait, counted), not only to confirm
    /// that an estimate past it is stale.
    private var waitingForBacklog = false
    /// When the connections are sampled for the watches next (monotonic ns), when they were last,
    /// the wire bytes sent by then, and how many more could be sent before one passed its budget.
    private var nextCheck: UInt64 = 0
    private var lastLook: UInt64 = 0
    private var sentAtLook: UInt64 = 0
    private var headroom: UInt64

    /// How often the watch looks: 10 times a second, so a stopped subscriber's queue passes its
    /// budget by at most a tenth of a second of traffic (the broker's `stallCheckInterval`).
    static let checkInterval: UInt64 = 100_000_000
    /// While holding for a subscriber past its budget (or its headroom used up), the watches look
    /// this often: 2 ms, so it is let go soon after it is back within its budget.
    static let holdCheckInterval: UInt64 = 2_000_000

    /// Whether the sender holds back for a subscriber past its budget that moves (the broker and
    /// a binding publisher); otherwise such a one is bounded only by the mark (budget ÷ 384 B
    /// messages, 11 times the budget in 4 KB frames, 88 times in 32 KiB ones), and only those that stop are disconnected.
    let holdsForBacklog: Bool

    /// A budget of `budget` bytes per subscriber and a patience of `patienceNanoseconds`; the
    /// quiet spell that ends a slow episode and the longest hold for a moving subscriber are the
    /// broker's: 20 patiences, at least 10 s.
    init(budget: Int, patienceNanoseconds: UInt64, holdsForBacklog: Bool = true) {
        self.holdsForBacklog = holdsForBacklog
        let quiet = max(10_000_000_000, patienceNanoseconds.multipliedReportingOverflow(by: 20).partialValue)
        machine = SlowSubscriberStateMachine(
            patienceNanoseconds: patienceNanoseconds, quietNanoseconds: quiet, disconnectsStalled: budget > 0,
            maximumHoldNanoseconds: quiet)
        watch = SubscriberStallWatch(budget: budget, patienceNanoseconds: patienceNanoseconds)
        backlog = SubscriberBacklogWatch(
            budget: budget, patienceNanoseconds: patienceNanoseconds, maximumHoldNanoseconds: quiet)
        headroom = UInt64(max(0, budget))
    }

    /// What the sender does next about the refused frame (`refused`, `stalledFound`).
    enum RefusalAction: Equatable {
        /// Hold it and try again (the posters wait). `waitBegan`: a new wait (count it).
        /// `takeBaseline`: hand `beginWait` the connections' samples now (what each must have
        /// moved from by the patience's end).
        case retry(waitBegan: Bool, takeBaseline: Bool)
        /// Send it past the full queues (`ZMQ_XPUB_NODROP` off for that one frame). `episodeStarted`:
        /// the first of a slow episode (log it), whose refusals began at `since`.
        case sendPast(episodeStarted: Bool, since: UInt64)
        /// The patience ran out: hand `stalled(in:)` the connections' samples, end the ones it
        /// names (`ended` for each that went), then ask `stalledFound`.
        case findStalled
    }

    /// The socket refused the frame at the head of the queue at `now`.
    mutating func refused(now: UInt64) -> RefusalAction {
        switch machine.refused(now: now) {
        case .findStalled: return .findStalled
        case .retry: return retry(restarted: false)
        case .sendPast(let episodeStarted, let since): return sendPast(episodeStarted: episodeStarted, since: since)
        }
    }

    /// The connections that took nothing since the wait began, to be ended (`findStalled`).
    func stalled(in samples: [ConnectionDescriptor: ConnectionSample]) -> [ConnectionDescriptor] {
        finder.stalled(samples)
    }

    /// After `findStalled`: `disconnected` of the stalled ones went, `samples` are the connections
    /// as they are now. Never `findStalled` again.
    mutating func stalledFound(
        disconnected: Int, samples: [ConnectionDescriptor: ConnectionSample], now: UInt64
    ) -> RefusalAction {
        switch machine.stalledFound(disconnected: disconnected, moving: finder.moving(samples).count, now: now) {
        // A wait begins again without the ones just disconnected.
        case .retry: return retry(restarted: true)
        case .sendPast(let episodeStarted, let since): return sendPast(episodeStarted: episodeStarted, since: since)
        // `stalledFound` never asks again; should it, the frame is held and asked about next time.
        case .findStalled: return .retry(waitBegan: false, takeBaseline: false)
        }
    }

    /// A wait begins (or begins again without the ones just disconnected): what each connection
    /// holds now is what it must have moved from by the deadline.
    mutating func beginWait(_ samples: [ConnectionDescriptor: ConnectionSample]) {
        finder.begin(samples)
    }

    /// A connection this policy named (a look's `disconnect`, or `stalled(in:)`) was ended.
    mutating func ended(_ descriptor: ConnectionDescriptor) {
        forget(descriptor)
    }

    private mutating func retry(restarted: Bool) -> RefusalAction {
        let began = !waiting
        waiting = true
        return .retry(waitBegan: began, takeBaseline: machine.disconnectsStalled && (began || restarted))
    }

    private mutating func sendPast(episodeStarted: Bool, since: UInt64) -> RefusalAction {
        waiting = false
        return .sendPast(episodeStarted: episodeStarted, since: since)
    }

    /// The socket took a frame whole at `now`: the wait, if any, is over. Says when a slow
    /// episode ended.
    mutating func accepted(now: UInt64) -> SlowSubscriberStateMachine.AcceptedOutcome {
        waiting = false
        return machine.accepted(now: now)
    }

    /// Whether the watches should look at `now`, `wireSent` wire bytes sent so far: ten times a
    /// second, and sooner (at most every `holdCheckInterval`) while holding for a backlog or once
    /// the bytes sent since the last look used up its headroom.
    func lookIsDue(now: UInt64, wireSent: UInt64) -> Bool {
        guard watch.budget > 0 else { return false }
        if now >= nextCheck { return true }
        return mustHold(wireSent: wireSent) && now &- lastLook >= Self.holdCheckInterval
    }

    /// Whether the next frame must wait: a subscriber past its budget is moving (flow control),
    /// or the bytes sent since the last look could have put one past it.
    func mustHold(wireSent: UInt64) -> Bool {
        holdsForBacklog && watch.budget > 0 && (holdingForBacklog || wireSent &- sentAtLook >= headroom)
    }

    /// How many more wire bytes may be sent before the next frame must wait (`mustHold`): 0 while
    /// it must, `UInt64.max` when the sender never holds. A sender that sends many frames at once
    /// (a binding publisher's loop, or its posting threads while the loop sleeps) stops at it.
    func allowance(wireSent: UInt64) -> UInt64 {
        guard holdsForBacklog && watch.budget > 0 else { return .max }
        guard !holdingForBacklog else { return 0 }
        let since = wireSent &- sentAtLook
        return since >= headroom ? 0 : headroom - since
    }

    /// Why a connection is disconnected.
    enum DisconnectReason: Equatable {
        /// Past its budget, it took nothing for the patience.
        case stalled
        /// Past its budget and moving, but not back within it for the longest hold.
        case slow
    }

    /// A connection a look says to end, and why.
    struct Disconnection: Equatable {
        let descriptor: ConnectionDescriptor
        /// The bytes held for it when sampled (for the report).
        let unsentBytes: Int
        let reason: DisconnectReason
    }

    /// What a look asks the sender to do.
    struct LookActions: Equatable {
        /// End these connections, in this order (`ended` for each that went).
        var disconnect: [Disconnection] = []
        /// A hold for a moving subscriber past its budget began with this look (count a wait).
        var holdBegan = false
    }

    /// The watches' look at `now`, `sent` bytes (messages) and `wireSent` bytes (with ZMTP's
    /// framing) sent in all so far: names the connections past their budget that take nothing
    /// (`SubscriberStallWatch`, `SubscriberBacklogWatch`), then those that stayed past it for the
    /// longest hold while moving, to be ended; and holds for the others past it
    /// (`holdingForBacklog`).
    mutating func look(
        _ samples: [ConnectionDescriptor: ConnectionSample], sent: UInt64, wireSent: UInt64, now: UInt64
    ) -> LookActions {
        var actions = LookActions()
        let found = backlog.look(samples, sent: wireSent, now: now)
        var stalled = Set(watch.observe(samples, forwarded: sent, now: now))
        stalled.formUnion(found.stalled)
        for descriptor in stalled.sorted(by: { $0.rawValue < $1.rawValue }) {
            actions.disconnect.append(
                Disconnection(descriptor: descriptor, unsentBytes: samples[descriptor]?.unsentBytes ?? 0, reason: .stalled))
        }
        for descriptor in found.slow where holdsForBacklog && !stalled.contains(descriptor) {
            actions.disconnect.append(
                Disconnection(descriptor: descriptor, unsentBytes: samples[descriptor]?.unsentBytes ?? 0, reason: .slow))
        }
        let holding = holdsForBacklog && !found.holdFor.isEmpty
        actions.holdBegan = holding && !waitingForBacklog
        waitingForBacklog = holding
        holdingForBacklog = holding || (holdsForBacklog && !found.confirm.isEmpty)
        headroom = found.headroom
        sentAtLook = wireSent
        lastLook = now
        nextCheck = now &+ Self.checkInterval
        return actions
    }

    private mutating func forget(_ descriptor: ConnectionDescriptor) {
        watch.forget(descriptor)
        backlog.forget(descriptor)
    }
}
