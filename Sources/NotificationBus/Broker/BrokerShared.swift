#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// State shared between a `Broker` and its forwarding thread: the stop request, the waiters of
/// `stop()`, and the counters the thread publishes after every round of work.
final class BrokerShared: Sendable {
    struct Control {
        var stopRequested = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let wake: WakeSignal
    let control = Mutex(Control())
    let statistics = Mutex(BrokerStatistics())
    /// Read by the loop every round without the lock.
    let stopRequested = Atomic<Bool>(false)
    /// When the forwarding loop last began a round (monotonic ns). The loop never waits longer
    /// than `BrokerForwarder.heartbeatInterval` between rounds, so a value much older than that
    /// means the thread is stuck (in a blocked write to a log pipe, say), whatever its sockets do.
    let lastRound = Atomic<UInt64>(0)
    /// The linger the stop's drain gave the backend (ns): what remained of `drainTimeout` once
    /// the held notification was sent. Written by the forwarding thread before it closes.
    let drainLinger = Atomic<UInt64>(0)
    /// The subscriptions the backend passed up (what the broker's XPUB holds).
    let subscriptions = BrokerSubscriptionTable()

    init(wake: WakeSignal) {
        self.wake = wake
        lastRound.store(Timestamps.monotonicNanoseconds(), ordering: .relaxed)
    }

    func requestStop() {
        control.withLock { $0.stopRequested = true }
        stopRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Called once by the forwarding thread after its sockets are closed.
    func markStopped() {
        let waiters = control.withLock { state in
            state.stopped = true
            defer { state.stopWaiters.removeAll() }
            return state.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
