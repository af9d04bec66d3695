#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// The state async callers share with the event loop, behind one lock.
struct Mailbox: ~Copyable {
    var lifecycle = BusLifecycle.open
    var commands: [BusCommand] = []
    /// Jobs of tasks that prefer the bus's executor, run by the event loop between rounds.
    var jobs: [UnownedJob] = []
    /// Encoded posts, as libzmq messages, waiting for the event loop (which swaps the whole batch out).
    var outbound = MessageBatch(capacity: 1024)
    /// Looped back: the values of typed posts in `outbound`, by index (`LocalMessageValue`), so
    /// this bus's own typed subscriptions take them without JSON. Taken with `outbound`.
    var localValues: [Int: any AnyObject & Sendable] = [:]
    /// The event loop is (about to be) parked in `zmq_poll`; whoever enqueues must signal the eventfd.
    var sleeping = false
    /// Next sequence number per name for this publisher (NBP/1: per (publisher, name), from 1).
    var sequences = PostSequences()
    var posted: UInt64 = 0
    /// Posters waiting for room in `outbound`.
    var spaceWaiters: [SpaceWaiter] = []
    /// Who may use the XPUB now, and what posting threads sent on it themselves.
    var lending = PublisherLendingStateMachine()
}

/// A poster waiting for room in the outbound queue; `id` lets a cancelled one leave the line.
struct SpaceWaiter {
    let id: UInt64
    let continuation: CheckedContinuation<Void, Never>

    func resume() { continuation.resume() }
}
