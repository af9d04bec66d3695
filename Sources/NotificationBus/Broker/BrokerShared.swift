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
        /// Callers of `Broker.retainedValues(limit:)` waiting for the loop's next round.
        var retainedListings: [RetainedListingRequest] = []
    }

    /// A listing of the retained values asked for: the forwarding thread, which owns the store,
    /// answers it at the start of its next round.
    struct RetainedListingRequest {
        var limit: Int
        var continuation: CheckedContinuation<BrokerRetainedValues, Never>
    }

    let wake: WakeSignal
    let control = Mutex(Control())
    let statistics = Mutex(BrokerStatistics())
    /// Read by the loop every round without the lock.
    let stopRequested = Atomic<Bool>(false)
    /// Whether `Control.retainedListings` holds a request (read by the loop every round).
    let retainedListingWanted = Atomic<Bool>(false)
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

    /// Called once by the forwarding thread after its sockets are closed. A listing still asked
    /// for is answered empty: the values went with the loop.
    func markStopped() {
        let (waiters, listings) = control.withLock { state in
            state.stopped = true
            defer {
                state.stopWaiters.removeAll()
                state.retainedListings.removeAll()
            }
            return (state.stopWaiters, state.retainedListings)
        }
        for waiter in waiters { waiter.resume() }
        for listing in listings { listing.continuation.resume(returning: BrokerRetainedValues()) }
    }

    /// Asks the forwarding loop for a listing of its retained values (`Broker.retainedValues`);
    /// empty at once once the loop has stopped.
    func requestRetainedListing(limit: Int) async -> BrokerRetainedValues {
        await withCheckedContinuation { (continuation: CheckedContinuation<BrokerRetainedValues, Never>) in
            let stopped = control.withLock { state -> Bool in
                if state.stopped { return true }
                state.retainedListings.append(RetainedListingRequest(limit: limit, continuation: continuation))
                retainedListingWanted.store(true, ordering: .releasing)
                return false
            }
            if stopped {
                continuation.resume(returning: BrokerRetainedValues())
            } else {
                wake.signal()
            }
        }
    }

    /// The listings asked for since the last call (the forwarding thread answers them).
    func takeRetainedListingRequests() -> [RetainedListingRequest] {
        control.withLock { state in
            retainedListingWanted.store(false, ordering: .relaxed)
            defer { state.retainedListings.removeAll() }
            return state.retainedListings
        }
    }
}
