import Synchronization

/// A value set once, from any thread, and awaited by any number of tasks: the one one-shot signal
/// of the outer layers (a worker's `go` line, a child's exit, the first shutdown signal, a limit
/// reached). The first `finish` wins; later ones are ignored.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [UInt64: CheckedContinuation<Value?, Never>] = [:]
        var nextWaiterID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// A signal not yet set.
    package init() {}

    /// Sets the value (the first call wins) and resumes every waiter; true if this call set it.
    @discardableResult
    package func finish(_ value: Value) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Value?, Never>]? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    /// The value, once set; nil if the waiting task is cancelled first.
    package var value: Value? {
        get async { await wait(cancellable: true) }
    }

    /// The value, once set, even in a cancelled task (a cleanup path waiting for a child's exit).
    package func valueIgnoringCancellation() async -> Value {
        while true {
            // Never nil: a wait that is not cancellable ends only with the value.
            if let value = await wait(cancellable: false) { return value }
        }
    }

    private func wait(cancellable: Bool) async -> Value? {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                // Cancelled already: `onCancel` may have run before this waiter was in line.
                let immediate: Value?? = state.withLock { state in
                    if let value = state.value { return .some(value) }
                    if cancellable && Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if case .some(let value) = immediate { continuation.resume(returning: value) }
            }
        } onCancel: {
            guard cancellable else { return }
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// The value if set.
    package var current: Value? { state.withLock { $0.value } }
}

extension OneShot where Value == Void {
    /// Sets the signal; true if this call set it.
    @discardableResult
    package func finish() -> Bool { finish(()) }
}
