import Synchronization

/// A view's counters behind a lock: written by the main actor and by task feeds running anywhere,
/// with waiters resumed once the counters satisfy their condition.
final class ViewMetricsRecorder: Sendable {
    private struct Waiter {
        let condition: @Sendable (ViewMetrics) -> Bool
        let continuation: CheckedContinuation<ViewMetrics, Never>
    }

    private struct Locked {
        var metrics = ViewMetrics()
        var waiters: [Waiter] = []

        /// Removes and returns the waiters whose condition now holds.
        mutating func satisfiedWaiters() -> [Waiter] {
            guard !waiters.isEmpty else { return [] }
            var satisfied: [Waiter] = []
            waiters.removeAll { waiter in
                guard waiter.condition(metrics) else { return false }
                satisfied.append(waiter)
                return true
            }
            return satisfied
        }
    }

    private let state = Mutex(Locked())

    /// Applies `change` under the lock, then resumes the waiters it satisfied.
    func update(_ change: (inout ViewMetrics) -> Void) {
        let (satisfied, metrics) = state.withLock { locked in
            change(&locked.metrics)
            return (locked.satisfiedWaiters(), locked.metrics)
        }
        for waiter in satisfied { waiter.continuation.resume(returning: metrics) }
    }

    /// A copy of the counters now.
    var snapshot: ViewMetrics { state.withLock { $0.metrics } }

    /// Returns the counters once `condition` holds (at once if it already does).
    func wait(until condition: @escaping @Sendable (ViewMetrics) -> Bool) async -> ViewMetrics {
        await withCheckedContinuation { (continuation: CheckedContinuation<ViewMetrics, Never>) in
            let ready: ViewMetrics? = state.withLock { locked in
                if condition(locked.metrics) { return locked.metrics }
                locked.waiters.append(Waiter(condition: condition, continuation: continuation))
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
