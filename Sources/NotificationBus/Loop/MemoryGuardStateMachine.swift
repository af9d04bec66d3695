import ZeroMQ

/// The memory guard of a process that listens (the broker's `--max-memory`, a binding bus's
/// `BusConfiguration.maximumResidentMemory`): the one bound on what libzmq holds for peers, such
/// as a message a peer never finishes, which grows inside libzmq where no counter of ours sees it.
///
/// Every `checkInterval` it looks at resident memory. Over the limit it first gives freed memory
/// back (glibc keeps a burst's freed heap, and queues libzmq just freed may still be on their way
/// back): only if that is not enough does it drop every connection, by re-binding every bound
/// endpoint (`Socket.rebind`; libzmq ends a listener's connections with it). Peers reconnect, and
/// what was in flight is lost and counted as gaps by the subscribers. After a drop it leaves
/// `cooldown` for libzmq's I/O thread to free the dropped connections before another drop: a
/// second look right after the first would still see their memory and drop the new connections
/// for nothing. Within the cooldown, memory over the limit is only given back.
///
/// Socket-free: the loop feeds it the clock (`tick`) and the readings it asked for (`measured`)
/// and does what the returned action says; `check` is that glue, shared by the broker and the
/// bus. Times are monotonic nanoseconds; deadlines saturate instead of wrapping.
struct MemoryGuardStateMachine {
    /// Resident memory (bytes) above which memory is given back, then every connection dropped.
    let limitBytes: UInt64
    /// Between two looks at resident memory.
    let checkIntervalNanoseconds: UInt64
    /// After a drop, before the next one may come.
    let cooldownNanoseconds: UInt64

    enum State: Equatable {
        /// Looks at memory again at `nextCheck`; a drop may come from `dropsFrom` on.
        case watching(nextCheck: UInt64, dropsFrom: UInt64)
        /// A look is due: the loop is reading resident memory (`measured` answers).
        case measuring(nextCheck: UInt64, dropsFrom: UInt64)
        /// The reading was over the limit and freed memory was given back: the second reading
        /// decides whether every connection is dropped.
        case trimmed(nextCheck: UInt64, dropsFrom: UInt64)
    }

    private(set) var state = State.watching(nextCheck: 0, dropsFrom: 0)

    enum Action: Equatable {
        /// Nothing to do (not time to look, within the limit, or no reading).
        case none
        /// Read resident memory and hand it to `measured`.
        case measure
        /// Over the limit within a drop's cooldown: give freed memory back, nothing more.
        case releaseFreeMemory
        /// Over the limit: give freed memory back, then read resident memory again and hand it
        /// to `measured`.
        case releaseFreeMemoryAndMeasure
        /// Still over the limit after giving memory back: drop every connection (re-bind every
        /// bound endpoint), count a reset and report `residentBytes`.
        case dropConnections(residentBytes: UInt64)
    }

    init(
        limitBytes: UInt64, checkIntervalNanoseconds: UInt64 = MemoryGuardTiming.checkInterval,
        cooldownNanoseconds: UInt64 = MemoryGuardTiming.cooldown
    ) {
        self.limitBytes = limitBytes
        self.checkIntervalNanoseconds = checkIntervalNanoseconds
        self.cooldownNanoseconds = cooldownNanoseconds
    }

    /// The clock: whether a look at memory is due. The next one is due one interval from now.
    mutating func tick(now: UInt64) -> Action {
        let (nextCheck, dropsFrom) = schedule
        guard now >= nextCheck else { return .none }
        state = .measuring(nextCheck: Self.adding(now, checkIntervalNanoseconds), dropsFrom: dropsFrom)
        return .measure
    }

    /// The reading asked for (`measure`, `releaseFreeMemoryAndMeasure`): resident bytes, or nil
    /// when it could not be read (then nothing is done on a guess).
    mutating func measured(residentBytes: UInt64?, now: UInt64) -> Action {
        let (nextCheck, dropsFrom) = schedule
        switch state {
        case .watching:
            // Not asked for (a stray reading): the next look is at the next tick.
            return .none
        case .measuring:
            state = .watching(nextCheck: nextCheck, dropsFrom: dropsFrom)
            guard let residentBytes, residentBytes > limitBytes else { return .none }
            guard now >= dropsFrom else { return .releaseFreeMemory }
            state = .trimmed(nextCheck: nextCheck, dropsFrom: dropsFrom)
            return .releaseFreeMemoryAndMeasure
        case .trimmed:
            guard let residentBytes, residentBytes > limitBytes else {
                state = .watching(nextCheck: nextCheck, dropsFrom: dropsFrom)
                return .none
            }
            state = .watching(nextCheck: nextCheck, dropsFrom: Self.adding(now, cooldownNanoseconds))
            return .dropConnections(residentBytes: residentBytes)
        }
    }

    /// One round of the guard, for a loop: feeds `now` and the readings of `residentMemory`,
    /// gives memory back through `releaseMemory` as told, and returns the resident bytes when
    /// every connection must be dropped now (the caller re-binds its endpoints and counts it).
    mutating func check(
        now: UInt64, residentMemory: () -> UInt64? = residentMemoryBytes, releaseMemory: () -> Void = releaseFreeMemory
    ) -> UInt64? {
        var action = tick(now: now)
        while true {
            switch action {
            case .none:
                return nil
            case .measure:
                action = measured(residentBytes: residentMemory(), now: now)
            case .releaseFreeMemory:
                releaseMemory()
                return nil
            case .releaseFreeMemoryAndMeasure:
                releaseMemory()
                action = measured(residentBytes: residentMemory(), now: now)
            case .dropConnections(let residentBytes):
                return residentBytes
            }
        }
    }

    /// The next look and the earliest drop, whatever the phase.
    private var schedule: (nextCheck: UInt64, dropsFrom: UInt64) {
        switch state {
        case .watching(let nextCheck, let dropsFrom), .measuring(let nextCheck, let dropsFrom),
            .trimmed(let nextCheck, let dropsFrom):
            (nextCheck, dropsFrom)
        }
    }

    /// `start + span`, saturating: a huge interval never wraps to a small deadline.
    private static func adding(_ start: UInt64, _ span: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(span)
        return overflow ? .max : sum
    }
}
