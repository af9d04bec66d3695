#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// What `Bus`, subscriptions and the I/O thread share: the mailbox, the wake-up fd and snapshots.
@usableFromInline
final class BusCore: Sendable {
    let mailbox = Mutex(Mailbox())
    let wake: WakeSignal
    let outboundCapacity: Int
    /// A post's frame at least this large is queued as its own message, never copied into the
    /// outbound queue (`OutboundPosts.ownMessageThreshold`).
    let ownMessageBytes: Int
    /// `BusConfiguration.batching`'s largest batch frame (0: no batching): a post queued through
    /// `queue(size:...)` with a record encoder is written as a batch record within it.
    let batchBytes: Int
    /// `BusConfiguration.idleSpin`, for consumers: how long one looks before suspending.
    let idleSpinNanoseconds: UInt64
    let statsSnapshot = Mutex(BusStats())
    /// Typed messages encoded and decoded (`BusStats.messagesEncoded`, `messagesDecoded`).
    let messageCoding = MessageCodingCounters()
    /// What this publisher's subscribers want; `post` asks before encoding (`decideInterest`).
    private let interest = Mutex(PublisherInterest())
    /// Bumped, inside `interest`'s lock, whenever what is wanted changes or the bus closes.
    private let interestVersion = Atomic<UInt64>(1)
    /// A name found wanted, mixed with the version it was found at (0: none): a run of posts to
    /// one wanted name (the common case) then costs a hash and two atomic loads, no lock. A hash
    /// collision can only make a post look wanted: it is then sent, and ZeroMQ's own filter drops
    /// it, as before filtering before encoding existed.
    private let wantedKey = Atomic<UInt64>(0)
    /// Set (under the mailbox lock) when a job is queued, cleared when the I/O thread takes them:
    /// a bus whose executor is unused costs the loop no lock to find that out.
    let jobsQueued = Atomic<Bool>(false)
    private let nextID = Atomic<UInt64>(1)
    /// The event loop's `pthread_self()` once it runs (0 before): to tell code on it from the rest.
    private let ioThread = Atomic<UInt>(0)

    /// Called by the I/O thread as it starts.
    func markIOThread() {
        ioThread.store(UInt(pthread_self()), ordering: .releasing)
    }

    /// Whether the caller runs on the bus's I/O thread (a task on `bus.executor`).
    var isOnIOThread: Bool {
        ioThread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// The XPUB for posts a posting thread sends itself; nil when every post goes through the
    /// loop (no publisher, or looped back: local subscriptions get posts from the loop).
    let directPublisher: DirectPublisher?
    /// Whether the loop has lent the XPUB (from `lend` until it reclaims it), written under the
    /// mailbox lock and read without it: a post reads the clock for `claim` only while it may be
    /// lent. Under load the loop is awake and holds the socket, and a post then skips a clock read
    /// that showed as 4% of a publisher's profile. A stale `false` costs only a wake-up of the
    /// loop instead of a direct send; a stale `true` only the clock read (`claim` decides).
    let publisherLent = Atomic<Bool>(false)

    /// A binding publisher's own retained values (NBP-1 §18.4): its retained posts, kept as they
    /// are queued (under the mailbox's lock, so a name's newer value is never overwritten by an
    /// older one), read by the event loop to answer the snapshot requests of subscribers
    /// connected straight to it. nil for any other bus.
    let ownRetained: Mutex<RetainedStore>?
    /// Whether `ownRetained` is there (read without borrowing it).
    let keepsOwnRetained: Bool
    /// Values `ownRetained` evicted to stay within its bounds, and those it dropped because their
    /// `retain-for` passed (`BusStats.ownRetainedEvictions`, `ownRetainedExpirations`).
    let ownRetainedEvictions = Atomic<UInt64>(0)
    let ownRetainedExpirations = Atomic<UInt64>(0)
    /// The name of the first value `ownRetained` evicted, until the event loop logs it.
    let firstOwnRetainedEviction = Mutex<String?>(nil)

    init(
        wake: WakeSignal, outboundCapacity: Int, idleSpinNanoseconds: UInt64 = 0, directPublisher: DirectPublisher? = nil,
        keepsOwnRetained: Bool = false, retainedNames: Int = BusConfiguration.defaultRetainedNames,
        retainedBytes: Int = BusConfiguration.defaultRetainedBytes,
        ownMessageBytes: Int = OutboundPosts.ownMessageThreshold,
        batchBytes: Int = 0
    ) {
        self.ownMessageBytes = ownMessageBytes
        self.batchBytes = batchBytes
        self.directPublisher = directPublisher
        self.keepsOwnRetained = keepsOwnRetained
        self.ownRetained =
            keepsOwnRetained
            ? Mutex(RetainedStore(maximumNames: retainedNames, maximumBytes: retainedBytes))
            : nil
        self.idleSpinNanoseconds = idleSpinNanoseconds
        self.wake = wake
        self.outboundCapacity = outboundCapacity
    }

    func makeID() -> UInt64 {
        nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Queues a command and wakes the event loop if it sleeps. Commands once the bus is closing
    /// are refused (closing ends every subscription and wait itself); returns false then.
    @discardableResult
    func enqueue(_ command: BusCommand) -> Bool {
        let (accepted, wake) = mailbox.withLock { box -> (Bool, Bool) in
            guard box.lifecycle.isOpen else { return (false, false) }
            box.commands.append(command)
            let wake = box.sleeping
            box.sleeping = false
            return (true, wake)
        }
        if wake { self.wake.signal() }
        return accepted
    }

    /// Asks the event loop to close (`open` -> `closing`); `waiter`, when given, is resumed once
    /// the loop has ended. Closing an already closing or closed bus only waits.
    func requestClose(waiter: CheckedContinuation<Void, Never>? = nil) {
        let (wake, resumeNow) = mailbox.withLock { box -> (Bool, Bool) in
            switch box.lifecycle {
            case .open:
                box.lifecycle = .closing(closeWaiters: waiter.map { [$0] } ?? [])
            case .closing(var waiters):
                if let waiter { waiters.append(waiter) }
                box.lifecycle = .closing(closeWaiters: waiters)
            case .closed:
                return (false, true)
            }
            let wake = box.sleeping
            box.sleeping = false
            return (wake, false)
        }
        if wake { self.wake.signal() }
        if resumeNow { waiter?.resume() }
    }

    /// The event loop has ended (`closing` or, when its context was terminated under it, `open`
    /// -> `closed`): resumes every `close()` caller. Ending twice is a programmer error.
    func markClosed() {
        let waiters = mailbox.withLock { box -> [CheckedContinuation<Void, Never>] in
            switch box.lifecycle {
            case .open:
                box.lifecycle = .closed
                return []
            case .closing(let waiters):
                box.lifecycle = .closed
                return waiters
            case .closed:
                preconditionFailure("the event loop ended twice")
            }
        }
        for waiter in waiters { waiter.resume() }
    }

    func wakeToResumeReading() {
        enqueue(.resumeReading)
    }

    enum PostOutcome {
        case queued
        case full
        case closed
    }

    /// Queues a job for the I/O thread and wakes it if it sleeps; false once the bus has closed.
    func enqueue(job: UnownedJob) -> Bool {
        let (accepted, wake) = mailbox.withLock { box -> (Bool, Bool) in
            guard box.lifecycle.isOpen else { return (false, false) }
            box.jobs.append(job)
            jobsQueued.store(true, ordering: .releasing)
            let wake = box.sleeping
            box.sleeping = false
            return (true, wake)
        }
        if wake { self.wake.signal() }
        return accepted
    }

    /// What `queue` decided under the lock.
    private enum QueueStep: ~Copyable {
        case queued(wake: Bool)
        /// Queued as a copy: the message is freed by the caller, outside the lock.
        case queuedCopy(wake: Bool, Message)
        case full
        case closed
        /// The loop sleeps and nothing waits before this post: the caller sends it itself.
        case sendDirectly(Message, DirectPublisher)
    }

    /// Stamps the message's sequence number for its name and queues it (or, when the loop sleeps
    /// and nothing is queued, sends it on the XPUB itself), in one critical section so sequence
    /// order is send order. Queued, a message of at least `ownMessageBytes` goes into the outbound
    /// queue itself (an entry of its own, `OutboundPosts.append(message:)`: its bytes are not
    /// copied under the lock); a smaller one is copied into the queue and freed here, on the
    /// posting thread that made it. Takes the message (leaving nil) only
    /// when it is queued or sent. `localValue`: a looped-back typed post's value (never with a
    /// direct publisher, which a looped-back bus has not: it would move the queue's indexes),
    /// queued beside its frame.
    func queue(message: inout Message?, name: NotificationName, localValue: (any AnyObject & Sendable)? = nil) -> PostOutcome {
        let nameByteCount = name.rawValue.utf8.count
        let now: UInt64? =
            directPublisher == nil || !publisherLent.load(ordering: .relaxed) ? nil : Timestamps.monotonicNanoseconds()
        let step = mailbox.withLock { box -> QueueStep in
            guard box.lifecycle.isOpen else { return .closed }
            if box.outbound.unsentCount >= outboundCapacity { return .full }
            guard var taken = message.take() else { return .queued(wake: false) }
            let sequence = box.sequences.next(for: name)
            box.posted += 1
            taken.withUnsafeMutableBytes { raw in
                EnvelopeCodec.stampSequence(sequence, nameByteCount: nameByteCount, into: raw)
                keepIfRetained(UnsafeRawBufferPointer(raw), nameByteCount: nameByteCount)
            }
            if let directPublisher, let now, box.lending.claim(now: now, queueEmpty: box.outbound.isEmpty) == .sendDirectly {
                box.outbound.endRun()  // empty already: no open batch frame (kept so by `appendRecord`'s rule)
                return .sendDirectly(taken, directPublisher)
            }
            let wake = box.sleeping
            box.sleeping = false
            if taken.count >= ownMessageBytes {
                box.outbound.append(message: taken)
                if let localValue { box.localValues[box.outbound.count - 1] = localValue }
                return .queued(wake: wake)
            }
            box.outbound.append(copying: &taken)
            if let localValue { box.localValues[box.outbound.count - 1] = localValue }
            return .queuedCopy(wake: wake, taken)
        }
        switch consume step {
        case .queued(let wake):
            if wake { self.wake.signal() }
            return .queued
        case .queuedCopy(let wake, let copied):
            _ = consume copied  // freed here, outside the lock
            if wake { self.wake.signal() }
            return .queued
        case .full:
            return .full
        case .closed:
            return .closed
        case .sendDirectly(let taken, let publisher):
            sendDirectly(taken, on: publisher)
            return .queued
        }
    }

    /// Whether a post may be sent directly by its posting thread now (the loop may have lent
    /// the XPUB): it is then encoded into its own message (`queue(message:name:)`), otherwise
    /// straight into the outbound queue (`queue(size:name:encode:)`).
    var mayLendPublisher: Bool {
        directPublisher != nil && publisherLent.load(ordering: .relaxed)
    }

    /// Queues a post of `size` bytes that `encode` writes straight into the outbound queue with
    /// the sequence number it is given, in one critical section so sequence order is queue
    /// order: no message of its own, no second copy, nothing freed on another thread. Never sends
    /// directly (`mayLendPublisher` is for that). `.full` leaves nothing done (no sequence used).
    /// `localValue`: a looped-back typed post's value, queued beside it (as `queue(message:...)`).
    /// `record`, with batching on: the post (never a retained one) as a batch record of that
    /// size, which `encodeRecord` writes, into the batch frame the last posts of its name began
    /// (`OutboundPosts.appendRecord`), so the loop sends the frame as it is; `encode` writes its
    /// frame only when it cannot be a record.
    func queue(
        size: Int, name: NotificationName, localValue: LocalMessageValue? = nil,
        record: (size: Int, publisherID: UInt64)? = nil,
        encodeRecord: (_ sequence: UInt64, _ into: UnsafeMutableRawBufferPointer) -> Void = { _, _ in },
        encode: (_ sequence: UInt64, _ into: UnsafeMutableRawBufferPointer) -> Void
    ) -> PostOutcome {
        let nameByteCount = name.rawValue.utf8.count
        let batchBytes = batchBytes
        let (outcome, wake) = mailbox.withLock { box -> (PostOutcome, Bool) in
            guard box.lifecycle.isOpen else { return (.closed, false) }
            if box.outbound.unsentCount >= outboundCapacity { return (.full, false) }
            let (sequence, sameName) = box.sequences.nextNotingRepeat(for: name)
            box.posted += 1
            if let record, batchBytes > 0,
                box.outbound.appendRecord(
                    name: name, sameName: sameName, nameLength: nameByteCount, publisherID: record.publisherID,
                    recordSize: record.size, maximumBytes: batchBytes, { out in encodeRecord(sequence, out) })
            {
                // Written as a record of a batch frame (not retained: nothing to keep).
            } else {
                box.outbound.append(size: size) { out in
                    encode(sequence, out)
                    keepIfRetained(UnsafeRawBufferPointer(out), nameByteCount: nameByteCount)
                }
            }
            if let localValue { box.localValues[box.outbound.count - 1] = localValue }
            let wake = box.sleeping
            box.sleeping = false
            return (.queued, wake)
        }
        if wake { self.wake.signal() }
        return outcome
    }

    /// A binding publisher keeps a stamped frame that carries the retain bit as its name's value
    /// (one byte looked at for any other frame).
    @inline(__always)
    private func keepIfRetained(_ frame: UnsafeRawBufferPointer, nameByteCount: Int) {
        guard keepsOwnRetained,
            frame.count > nameByteCount + 1 + WireFormat.FixedHeaderOffset.flags,
            frame[nameByteCount + 1 + WireFormat.FixedHeaderOffset.flags] & WireFormat.Flag.retain != 0
        else { return }
        let now = Timestamps.monotonicNanoseconds()
        // This bus encoded the frame: it is well formed (a frame that were not would keep nothing).
        switch ownRetained?.withLock({ $0.remember(frame: frame, nameLength: nameByteCount, now: now) }) {
        case .keptEvicting(let count, let lastName):
            noteOwnRetainedEvicted(count, name: lastName)
        case .tooLarge:
            // Larger than the whole byte bound: not kept, counted as the broker counts it.
            noteOwnRetainedEvicted(1, name: String(decoding: frame[0..<nameByteCount], as: UTF8.self))
        case .kept, .cleared, nil:
            break
        }
    }

    /// Counts values `ownRetained` evicted (rare: past its bounds), the first one's name kept
    /// for the event loop's warning.
    private func noteOwnRetainedEvicted(_ count: Int, name: String) {
        let before = ownRetainedEvictions.wrappingAdd(UInt64(count), ordering: .relaxed).oldValue
        if before == 0 { firstOwnRetainedEviction.withLock { $0 = name } }
    }

    /// Sends one post on the XPUB from the posting thread, which owns the socket until it gives
    /// it back here (`PublisherLendingStateMachine.release`). Refused (back-pressure), the post
    /// goes first in the outbound queue and the loop takes over; either way the loop is woken if
    /// the send left it work.
    private func sendDirectly(_ message: consuming Message, on publisher: DirectPublisher) {
        var message = message
        // What the frame takes on the wire: a binding publisher's budget counts that.
        let bytes = SubscriberBacklogWatch.wireBytes(message.count, parts: 1, curve: publisher.curve)
        var outcome = PublisherLendingStateMachine.SendOutcome.sent
        do {
            if try !publisher.socket.sendIfReady(&message) { outcome = .refused }
        } catch {
            outcome = .rejected  // ZeroMQ refuses this frame outright: counted as unsent, like the loop does
        }
        // The send may have consumed the socket's signal for incoming subscription messages: a
        // loop asleep on that signal must hear of them from here.
        // Unreadable events (the socket closing) count as input: the loop then looks for itself.
        let readable = Int32(PollEvents.readable.rawValue)
        let input = ((try? publisher.socket.get(.events)) ?? readable) & readable != 0
        var unsent: Message? = nil
        if outcome == .refused { unsent = consume message }
        let wake = mailbox.withLock { box -> Bool in
            let action = box.lending.release(
                outcome, now: Timestamps.monotonicNanoseconds(), inputWaiting: input, queueEmpty: box.outbound.isEmpty,
                loopSleeping: box.sleeping, bytes: bytes)
            let wake: Bool
            switch action {
            case .done:
                return false
            case .wakeLoop:
                wake = true
            case .requeue(let wakeLoop):
                if let taken = unsent.take() { box.outbound.prepend(message: taken) }
                wake = wakeLoop
            }
            if wake { box.sleeping = false }
            return wake
        }
        if wake { self.wake.signal() }
    }

    /// The event loop takes the XPUB back after sleeping, waiting out a poster's send in progress
    /// (a few microseconds: one `zmq_msg_send`).
    func takePublisherSocket() {
        guard directPublisher != nil else { return }
        while mailbox.withLock({ box -> PublisherLendingStateMachine.ReclaimAction in
            let action = box.lending.reclaim()
            if action == .taken { publisherLent.store(false, ordering: .relaxed) }
            return action
        }) == .waitForPoster { sched_yield() }
    }

    /// The closing event loop takes the XPUB for good before closing it: no post is sent
    /// directly from then on.
    func closePublisherSocket() {
        guard directPublisher != nil else { return }
        while mailbox.withLock({ box -> PublisherLendingStateMachine.CloseAction in
            let action = box.lending.close()
            if action == .close { publisherLent.store(false, ordering: .relaxed) }
            return action
        }) == .waitForPoster { sched_yield() }
    }

    /// Whether a post of `name` is wanted (`PublisherInterest.decide`); nil when the bus is closed.
    func decideInterest(_ name: NotificationName) -> PublisherInterest.Decision? {
        let version = interestVersion.load(ordering: .acquiring)
        let key = Self.interestKey(name, version: version)
        if wantedKey.load(ordering: .relaxed) == key { return .wanted }
        let decision = interest.withLock { $0.closed ? nil : $0.decide(name) }
        if decision == .wanted { wantedKey.store(key, ordering: .relaxed) }
        return decision
    }

    /// Posts skipped as unwanted so far; of those, posts of a name sent before, and of these
    /// the ones posted while a connection was down.
    var unwantedPosts: (all: UInt64, afterSending: UInt64, whileDisconnected: UInt64) {
        interest.withLock { ($0.unwanted, $0.unwantedAfterSending, $0.unwantedWhileDisconnected) }
    }

    /// A post of a name sent before found no subscriber: counted as lost to a connection that is
    /// down when fewer than `connecting` endpoints are connected (as of the loop's last round:
    /// the loop publishes a connection made or lost in the round it sees it).
    func noteUnwantedAfterSending(connecting: Int) {
        guard connecting > 0, statsSnapshot.withLock({ $0.connectedEndpoints }) < connecting else { return }
        interest.withLock { $0.countDisconnected() }
    }

    /// Changes what is wanted (the I/O thread for the XPUB's prefixes, `Bus.subscribe` for
    /// loopback ones), invalidating the lock-free answer.
    /// Whether a subscriber through the XPUB wants `name` (`PublisherInterest.isWantedRemotely`).
    func isWantedRemotely(_ name: NotificationName) -> Bool {
        interest.withLock { $0.isWantedRemotely(name) }
    }

    func changeInterest(_ body: (inout PublisherInterest) -> Void) {
        interest.withLock { interest in
            body(&interest)
            interestVersion.add(1, ordering: .releasing)
        }
    }

    /// FNV-1a of the name's bytes mixed with `version`; never 0.
    private static func interestKey(_ name: NotificationName, version: UInt64) -> UInt64 {
        var text = name.rawValue
        let hash = text.withUTF8 { bytes -> UInt64 in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            return hash
        }
        return (hash ^ (version &* 0x9e37_79b9_7f4a_7c15)) | 1
    }

    /// Uses `name`'s next sequence number for a post that is not sent (nobody wants it now).
    func skipSequence(of name: NotificationName) {
        mailbox.withLock { box in
            _ = box.sequences.next(for: name)
            // The next post of the open batch frame's name may be this name's: it starts its own.
            box.outbound.endRun()
        }
    }

    /// Suspends until the outbound queue has room, the bus closed, or the task is cancelled.
    func waitForSpace() async {
        let id = makeID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = mailbox.withLock { box -> Bool in
                    // Cancelled already: `onCancel` may have run before this waiter was in line.
                    if !box.lifecycle.isOpen || box.outbound.unsentCount < outboundCapacity || Task.isCancelled {
                        return true
                    }
                    box.spaceWaiters.append(SpaceWaiter(id: id, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = mailbox.withLock { box -> SpaceWaiter? in
                guard let index = box.spaceWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return box.spaceWaiters.remove(at: index)
            }
            waiter?.resume()
        }
    }
}
