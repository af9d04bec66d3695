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
    /// Encoded posts, back to back in one reused buffer, waiting for the event loop (which swaps
    /// the whole queue out).
    var outbound = OutboundPosts()
    /// Looped back: the values of typed posts in `outbound`, by index (`LocalMessageValue`), so
    /// this bus's own typed subscriptions take them without JSON. Taken with `outbound`.
    var localValues = LocalValues()
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

/// Looped back: the values of typed posts (`LocalMessageValue`) by post index, beside the frames
/// they travel with (`Mailbox.localValues`, `PendingPosts`, `BusReceiver`). Posts are indexed
/// densely from 0 in each batch, so an array serves: a typed post costs an append, not a hash
/// table insert, and its delivery an index, not a look-up.
struct LocalValues {
    private var values: [(any AnyObject & Sendable)?] = []

    init() {}

    /// No post has a value.
    var isEmpty: Bool { values.isEmpty }

    /// The value of the post at `index`, nil when it has none.
    subscript(index: Int) -> (any AnyObject & Sendable)? {
        get { index >= 0 && index < values.count ? values[index] : nil }
        set {
            guard index >= 0 else { return }
            if index >= values.count {
                guard newValue != nil else { return }
                while values.count < index { values.append(nil) }
                values.append(newValue)
            } else {
                values[index] = newValue
            }
        }
    }

    mutating func removeAll(keepingCapacity: Bool) {
        values.removeAll(keepingCapacity: keepingCapacity)
    }
}
