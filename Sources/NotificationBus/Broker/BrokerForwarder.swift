#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// What a broker tells its owner as it happens, on the broker's forwarding thread.
public enum BrokerEvent: Sendable, Hashable, CustomStringConvertible {
    /// A subscriber made no room for `waitedMilliseconds`: notifications now go past it (and any
    /// other full subscriber), which lose them and count the loss by sequence number.
    case slowSubscriberStarted(waitedMilliseconds: UInt64)
    /// Every subscriber has room again; `sentPast` notifications went past a full one meanwhile.
    case slowSubscriberEnded(afterMilliseconds: UInt64, sentPast: UInt64)
    /// The broker's resident memory passed its limit: it dropped every connection (peers
    /// reconnect at once; what was in flight is lost and counted as gaps by subscribers).
    case memoryLimitReached(residentBytes: UInt64, limitBytes: UInt64)

    public var description: String {
        switch self {
        case .slowSubscriberStarted(let waited):
            return "slow subscriber: one made no room for \(waited) ms; sending past full subscribers "
                + "(they lose those notifications and count them as gaps)"
        case .slowSubscriberEnded(let after, let sentPast):
            return "slow subscriber caught up after \(after) ms; \(sentPast) notification(s) went past a full subscriber"
        case .memoryLimitReached(let resident, let limit):
            return "memory \(resident >> 20) MiB is over the limit of \(limit >> 20) MiB: dropped every connection "
                + "(a peer holding memory, e.g. a message it never finishes, or too many slow subscribers); they reconnect"
        }
    }
}

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

    init(wake: WakeSignal) {
        self.wake = wake
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

/// The broker's forwarding loop: notifications from the frontend (XSUB) to the backend (XPUB),
/// subscriptions from the backend to the frontend, on the thread that owns both sockets.
///
/// It replaces libzmq's `zmq_proxy` for one reason: what to do when a subscriber's queue is full.
/// `zmq_proxy` sends with the XPUB's default, which drops for that subscriber without a word, so a
/// fast publisher lost most of a burst through the broker. Here the backend has
/// `ZMQ_XPUB_NODROP`: a refused notification is held (and the frontend left unread, so the
/// publishers wait, by default, for the broker) until the subscribers make room, or until
/// `SlowSubscriberStateMachine` says one is slow; then it goes past the full ones.
final class BrokerForwarder {
    private let frontend: Socket
    private let backend: Socket
    private let shared: BrokerShared
    private var machine: SlowSubscriberStateMachine
    private let onEvent: (@Sendable (BrokerEvent) -> Void)?
    /// The resident-memory limit in bytes (nil: none), the endpoints to re-bind when it is
    /// passed, and when memory is looked at next (monotonic ns).
    private let memoryLimit: UInt64?
    private let boundEndpoints: [(socket: Socket, endpoint: String)]
    private var nextMemoryCheck: UInt64 = 0
    /// After dropping every connection, libzmq frees their queues on its own I/O thread: no
    /// second drop before this (monotonic ns).
    private var memoryCooldownUntil: UInt64 = 0
    private static let memoryCheckInterval: UInt64 = 100_000_000
    /// The notification read from the frontend and not yet taken by the backend.
    private var held = MessageBatch(capacity: 4)
    private var heldBytes = 0
    /// When the held notification was refused in a wait that is still going on (nil: not waiting).
    private var retryDeadline: UInt64?
    private var subscription = MessageBatch(capacity: 2)
    private var stats = BrokerStatistics()
    /// Memory was given back since the last message moved, which was at `idleSince`.
    private var trimmedSinceTraffic = false
    private var idleSince: UInt64 = 0
    /// Messages moved per side before looking at the other side and the stop flag again.
    private static let roundLimit = 512

    init(
        frontend: Socket, backend: Socket, shared: BrokerShared, patienceNanoseconds: UInt64,
        memoryLimit: UInt64?, boundEndpoints: [(socket: Socket, endpoint: String)],
        onEvent: (@Sendable (BrokerEvent) -> Void)?
    ) throws(ZMQError) {
        self.frontend = frontend
        self.backend = backend
        self.shared = shared
        self.machine = SlowSubscriberStateMachine(patienceNanoseconds: patienceNanoseconds)
        self.memoryLimit = memoryLimit
        self.boundEndpoints = boundEndpoints
        self.onEvent = onEvent
        try backend.set(.xpubNoDrop, true)
        try backend.set(.sendTimeout, 1)
    }

    /// Forwards until the broker is asked to stop or the context ends.
    func run() {
        // Two pollers: while a notification is held the frontend is not watched (reading it
        // would be pointless) and nothing is waited for here: the retry of the held one waits
        // (a blocking send with a 1 ms timeout wakes as soon as a subscriber makes room; libzmq's
        // XPUB cannot be polled for room), and this only looks at subscriptions and the stop flag.
        var reading = Poller()
        reading.register(frontend)
        reading.register(backend)
        let readingWake = reading.register(fileDescriptor: shared.wake.fileDescriptor)
        var holding = Poller()
        holding.register(backend)
        let holdingWake = holding.register(fileDescriptor: shared.wake.fileDescriptor)
        while !shared.stopRequested.load(ordering: .acquiring) {
            checkMemory()
            do {
                let moved = try forwardSubscriptions() + forwardNotifications()
                if moved > 0 {
                    trimmedSinceTraffic = false
                    idleSince = Timestamps.monotonicNanoseconds()
                    publishStatistics()
                } else if !held.isEmpty {
                    try holding.poll(timeoutMilliseconds: 0)
                    if holding.ready(at: holdingWake).contains(.readable) { shared.wake.drain() }
                } else {
                    // Idle: after 10 s without traffic, give freed memory back to the system once
                    // (glibc keeps what a flood of connections or a big burst allocated).
                    // With a memory limit, wake 10 times a second to look at it: a message a peer
                    // never finishes grows inside libzmq, where this loop sees no traffic.
                    var timeout = trimmedSinceTraffic ? -1 : 10_000
                    if memoryLimit != nil { timeout = timeout < 0 ? 100 : min(timeout, 100) }
                    let ready = try reading.poll(timeoutMilliseconds: timeout)
                    if ready == 0, !trimmedSinceTraffic, Timestamps.monotonicNanoseconds() >= idleSince &+ 10_000_000_000 {
                        releaseFreeMemory()
                        trimmedSinceTraffic = true
                    }
                    if reading.ready(at: readingWake).contains(.readable) { shared.wake.drain() }
                }
            } catch {
                // ETERM: the context is ending, nothing more can be sent. Any other error of a
                // socket this thread owns is a bug, not a peer's doing (peers cannot make
                // zmq_msg_send, zmq_msg_recv or zmq_poll fail otherwise; EINTR is retried), and
                // repeating it would spin: count it and stop forwarding.
                if error.kind != .contextTerminated { stats.forwardingErrors &+= 1 }
                break
            }
        }
        held.removeAll()
        subscription.removeAll()
        publishStatistics()
    }

    /// Every 100 ms with a memory limit: past it, drop every connection (re-bind each bound
    /// endpoint; libzmq ends a listener's connections with it) and give the memory back.
    private func checkMemory() {
        guard let memoryLimit else { return }
        let now = Timestamps.monotonicNanoseconds()
        guard now >= nextMemoryCheck else { return }
        nextMemoryCheck = now &+ Self.memoryCheckInterval
        guard let resident = residentMemoryBytes(), resident > memoryLimit else { return }
        // Freed queues may still be on their way back to the allocator: trim first.
        releaseFreeMemory()
        guard now >= memoryCooldownUntil, let after = residentMemoryBytes(), after > memoryLimit else { return }
        memoryCooldownUntil = now &+ 300_000_000
        stats.memoryLimitResets &+= 1
        for (socket, endpoint) in boundEndpoints {
            do {
                try socket.unbind(endpoint)
                try socket.bind(endpoint)
            } catch {
                stats.forwardingErrors &+= 1
            }
        }
        publishStatistics()
        onEvent?(.memoryLimitReached(residentBytes: after, limitBytes: memoryLimit))
    }

    private func publishStatistics() {
        let snapshot = stats
        shared.statistics.withLock { $0 = snapshot }
    }

    /// Subscription messages from subscribers go up to the publishers (the XSUB sends them without
    /// a mark, so it never refuses one).
    private func forwardSubscriptions() throws(ZMQError) -> Int {
        var moved = 0
        while moved < Self.roundLimit {
            guard try receiveWholeMessage(from: backend, into: &subscription) != nil else { break }
            stats.subscriptionMessages &+= 1
            if try !frontend.sendParts(&subscription) { stats.forwardingErrors &+= 1 }
            subscription.removeAll()
            moved += 1
        }
        return moved
    }

    /// Notifications from publishers go down to the subscribers, each whole or held.
    private func forwardNotifications() throws(ZMQError) -> Int {
        var moved = 0
        while moved < Self.roundLimit {
            if held.isEmpty {
                guard let bytes = try receiveWholeMessage(from: frontend, into: &held) else { break }
                heldBytes = bytes
                stats.fromPublishers &+= 1
                stats.bytesFromPublishers &+= UInt64(bytes)
            }
            // A held notification was refused before: this try waits up to 1 ms for room.
            if try backend.sendParts(&held, mode: retryDeadline == nil ? .dontWait : .blocking) {
                if case .episodeEnded(let duration, let sentPast) = machine.accepted(now: Timestamps.monotonicNanoseconds()) {
                    onEvent?(.slowSubscriberEnded(afterMilliseconds: duration / 1_000_000, sentPast: sentPast))
                }
                delivered()
                moved += 1
                continue
            }
            let now = Timestamps.monotonicNanoseconds()
            switch machine.refused(now: now) {
            case .retry(let deadline):
                if retryDeadline == nil { stats.backpressureWaits &+= 1 }
                retryDeadline = deadline
                return moved
            case .sendPast(let episodeStarted, let since):
                if episodeStarted {
                    stats.slowSubscriberEpisodes &+= 1
                    onEvent?(.slowSubscriberStarted(waitedMilliseconds: (now &- since) / 1_000_000))
                }
                // For this one send the XPUB drops for full subscribers instead of refusing.
                try backend.set(.xpubNoDrop, false)
                let sent = try backend.sendParts(&held)
                try backend.set(.xpubNoDrop, true)
                stats.sentPastSlowSubscribers &+= 1
                if !sent { stats.forwardingErrors &+= 1 }
                delivered()
                moved += 1
            }
        }
        return moved
    }

    /// Counts the held notification as sent and lets it go.
    private func delivered() {
        stats.toSubscribers &+= 1
        stats.bytesToSubscribers &+= UInt64(heldBytes)
        held.removeAll()
        heldBytes = 0
        retryDeadline = nil
    }

    /// Reads every part of the next message (none: nil), returning its size in bytes. The parts
    /// after the first are already there: libzmq delivers messages whole.
    private func receiveWholeMessage(from socket: Socket, into batch: inout MessageBatch) throws(ZMQError) -> Int? {
        guard let first = try socket.receivePart(appendingTo: &batch, mode: .dontWait) else { return nil }
        var more = first.more
        var bytes = first.size
        while more {
            guard let part = try socket.receivePart(appendingTo: &batch, mode: .blocking) else { break }
            more = part.more
            bytes &+= part.size
        }
        return bytes
    }
}
