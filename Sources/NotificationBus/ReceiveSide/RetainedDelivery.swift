import Synchronization

/// One subscription's retained snapshot (NBP-1 §18) as its waiters see it: pending until the
/// I/O thread has handed the subscription its last retained value (or the subscription ended),
/// then done. `Bus.ready(_:)` waits on it.
final class RetainedDelivery: Sendable {
    /// How the snapshot ended.
    enum Outcome: Sendable, Equatable {
        /// `count` values were handed over; `takesAll`: the broker that sent them takes every
        /// publisher's notifications, so the subscription is live at every publisher behind it.
        case delivered(count: Int, takesAll: Bool)
        /// Nothing will come: the subscription ended, or nothing answers (an embedded bus).
        case none
    }

    private struct State {
        var outcome: Outcome?
        var waiters: [UInt64: CheckedContinuation<Outcome?, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The outcome, once there is one.
    var outcome: Outcome? { state.withLock { $0.outcome } }

    /// Called once by the I/O thread (later calls are ignored): resumes every waiter.
    func complete(_ outcome: Outcome) {
        let waiters: [CheckedContinuation<Outcome?, Never>] = state.withLock { state in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    /// Suspends until `complete`; nil when the waiting task is cancelled first.
    func wait() async -> Outcome? {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome?, Never>) in
                let now: Outcome?? = state.withLock { state in
                    if let outcome = state.outcome { return .some(outcome) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }
}
