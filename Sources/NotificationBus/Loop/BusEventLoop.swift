#if canImport(Glibc)
import Glibc
#endif
import ZeroMQ

/// The one thread that owns a bus's sockets: it parks in `zmq_poll`, wakes, swaps the mailbox,
/// runs executor jobs, feeds what it read to the state machines (`PublisherStateMachine`,
/// `SubscriberTopics`, `WaiterStateMachine`, `BusReceiver`) and carries out their actions against
/// the sockets. It knows sockets and registrations; the protocol is the machines' and NBP1's.
///
/// Error policy, the same for every socket call: would-block is a value (`receiveIfReady`,
/// `sendIfReady`, a batch send's count), never an error; a terminated context ends the loop; any
/// other error reaches the waiter it concerns, or `BusStats.socketErrors` with its text. A `try?`
/// appears only where the reason is written beside it.
final class BusEventLoop {
    let core: BusCore
    let configuration: BusConfiguration
    let executor: BusExecutor
    let sockets: BusSockets

    var receiver: BusReceiver
    var publisherSide: PublisherStateMachine
    var topics: SubscriberTopics
    var waiters = WaiterStateMachine()
    /// The callers of pending waits, by `WaitRequest.id`.
    var continuations: [UInt64: CheckedContinuation<Result<Void, BusError>, Never>] = [:]
    /// The publisher side: posts taken from the mailbox until ZeroMQ has them, and their counts.
    var posts: PendingPosts
    /// What the loop counts itself (socket errors, handshakes, the memory guard); the two sides'
    /// counters join it in `publishStats`.
    var stats = BusStats()
    /// `configuration.logger`'s lines (debug): connections, failed handshakes, rejections.
    var log: BusLog
    /// The first of this bus's own retained values evicted was logged (once per bus).
    var ownRetainedEvictionWarned = false
    /// The XPUB's `ZMQ_FD` when posting threads may send on it while the loop sleeps.
    var publisherSignal: Int32?
    /// Set by `record(_:_:)` when the context is terminated under the loop: the loop ends.
    var contextTerminated = false
    /// Busy rounds until the handshake monitors are read again: failures repeat at every
    /// reconnect, so a look every 64th round (and after every sleep) is prompt enough.
    private var roundsUntilHandshakeCheck = 0
    /// With `maximumResidentMemory`: the memory guard (BusEventLoop+MemoryGuard.swift).
    lazy var memoryGuard = configuration.maximumResidentMemory.map { MemoryGuardStateMachine(limitBytes: $0) }
    /// A binding publisher that keeps its subscribers' budget (BusEventLoop+SubscriberBudget.swift).
    var budgetSide: SubscriberBudgetSide?

    static let batchLimit = 1024

    init(core: BusCore, configuration: BusConfiguration, executor: BusExecutor, sockets: BusSockets) {
        self.core = core
        self.configuration = configuration
        self.executor = executor
        self.sockets = sockets
        log = BusLog(configuration.logger)
        receiver = BusReceiver(
            maximumPayload: configuration.maximumPayload, maximumHeaderCount: configuration.maximumHeaderCount,
            maximumTrackedStreams: configuration.maximumTrackedStreams, paths: sockets.subscribers.count,
            gapTimeout: configuration.pathGapTimeout)
        receiver.localRetained = RetainedStore(maximumNames: configuration.retainedNames, maximumBytes: configuration.retainedBytes)
        if sockets.subscribers.count > 1 {
            // A path whose connection a monitor reports is down until it says it is up.
            receiver.startDisconnected(paths: sockets.handshakeMonitors.filter { !$0.isPublisher }.map(\.path))
        }
        publisherSide = PublisherStateMachine(publisherID: configuration.publisherID, paths: sockets.publishers.count)
        posts = PendingPosts(
            loopback: sockets.loopback, maximumBatchBytes: configuration.batching.maximumFrameBytes,
            paths: sockets.publishers.count, pathStallLimit: Timestamps.boundedNanoseconds(configuration.pathStallLimit),
            countsBytes: sockets.subscriberConnections != nil, curve: configuration.curveServer != nil)
        if let connections = sockets.subscriberConnections {
            // As the broker: a subscriber past its budget that moves holds everything new back.
            budgetSide = SubscriberBudgetSide(
                policy: SubscriberBudgetPolicy(
                    budget: configuration.subscriberBudget,
                    patienceNanoseconds: Timestamps.boundedNanoseconds(BusConfiguration.subscriberPatience),
                    holdsForBacklog: true),
                connections: connections)
        }
        topics = SubscriberTopics(busID: configuration.publisherID, loopback: sockets.loopback)
        if core.directPublisher != nil, let publisher = sockets.publisher {
            do { publisherSignal = try publisher.get(.fileDescriptor) } catch { record(error, "reading ZMQ_FD") }
        }
    }

    /// In debug builds: traps unless called on the loop's own thread (every socket is its alone).
    @inline(__always)
    func assertOnLoopThread() {
        assert(core.isOnIOThread, "BusEventLoop used off its own thread")
    }

    // MARK: The loop

    func run() {
        core.markIOThread()
        var commands: [BusCommand] = []
        var jobs: [UnownedJob] = []
        let spinNanoseconds = configuration.idleSpinInNanoseconds
        var lastWork = Timestamps.monotonicNanoseconds()
        while !contextTerminated {
            // Tasks running on the bus's executor first: what they post goes out in this round.
            var didWork = runJobs(&jobs)
            // Back-pressure: take more posts only once everything taken so far went to ZeroMQ, so a
            // refusing XPUB leaves them in the bounded mailbox, where `post` waits for room.
            let takeOutbound = posts.emptyIfAllSent()
            let (open, spaceWaiters) = core.mailbox.withLock { box -> (Bool, [SpaceWaiter]) in
                box.sleeping = false
                swap(&box.commands, &commands)
                guard takeOutbound else { return (box.lifecycle.isOpen, []) }
                posts.take(&box.outbound, localValues: &box.localValues)
                defer { box.spaceWaiters.removeAll() }
                return (box.lifecycle.isOpen, box.spaceWaiters)
            }
            for waiter in spaceWaiters { waiter.resume() }
            if takeOutbound { posts.coalesce(allocationFailed: { record($0, "allocating a batch frame") }) }
            didWork = didWork || !commands.isEmpty
            // Looped back, a subscription that starts from this bus's own retained values takes
            // them as the posts queued before it left them: those posts reach the local
            // subscriptions (and `localRetained`) first, so a value cleared or replaced before
            // the subscription was made is not handed over (RetainedClearOrderTests).
            if sockets.loopback, commands.contains(where: \.addsRetainedSubscription) { deliverTakenPostsLocally() }
            for command in commands { handle(command) }
            commands.removeAll(keepingCapacity: true)
            if !open { break }
            // A round whose only work was sending everything it had needs no second look before
            // sleeping (two libzmq command rounds saved for every sparse post): the reads below
            // come after the sends (so a send that took the XPUB's signal is read past), and the
            // park checks the mailbox under its lock. Anything left unsent (a refusal, a budget's
            // allowance, several paths), or posts routed to this bus's own subscriptions, still
            // take the round after.
            let sent = sendPending()
            if sent && (posts.hasUnsent || sockets.loopback || posts.hasSeveralPaths) { didWork = true }
            didWork = readSubscriptions() || didWork
            if !receiver.readingPaused { didWork = readNotifications() || didWork }
            // A consumer on the bus's executor that this round resumed runs now, not a round later.
            didWork = runJobs(&jobs) || didWork
            roundsUntilHandshakeCheck -= 1
            if roundsUntilHandshakeCheck <= 0 {
                roundsUntilHandshakeCheck = 64
                didWork = readHandshakeFailures() || didWork
            }
            perform(waiters.tick(now: Timestamps.monotonicNanoseconds()))
            if publisherSide.nextJoinDeadline != nil { perform(publisherSide.joinTick(wallClock: Timestamps.wallClockNanoseconds())) }
            checkMemory()
            disconnectSubscribersPastBudget()
            if didWork {
                publishStats()
                if spinNanoseconds > 0 { lastWork = Timestamps.monotonicNanoseconds() }
                continue
            }
            if sent && spinNanoseconds > 0 { lastWork = Timestamps.monotonicNanoseconds() }
            if posts.hasUnsent {
                // Held back for a subscriber past its budget, nothing may go: sleep until the next look.
                if holdsForSubscriberBudget { parkWhileHoldingForBudget() } else { waitForRoomToSend() }
                continue
            }
            // Idle strategy: within `idleSpin` of the last work, yield the core and
            // look again instead of sleeping, so the next message needs no wake-up (latency).
            if spinNanoseconds > 0, Timestamps.monotonicNanoseconds() - lastWork < spinNanoseconds {
                sched_yield()
                continue
            }
            publishStats()
            let parked = core.mailbox.withLock { box -> Bool in
                guard box.commands.isEmpty, box.outbound.isEmpty, box.jobs.isEmpty, box.lifecycle.isOpen else {
                    return false
                }
                box.sleeping = true
                // Asleep, the loop lends the XPUB to posting threads (`PublisherLendingStateMachine`)
                // when it can watch it through its signal fd meanwhile; with a kept budget, only
                // for the bytes its headroom allows, and not at all while it holds back for a
                // subscriber past it (posts then queue, and wait: flow control).
                if publisherSignal != nil {
                    let allowance = budgetSide?.policy.allowance(wireSent: posts.bytesSent &+ box.lending.sentBytes) ?? .max
                    if allowance > 0, box.lending.lend(allowance: allowance) == .lent {
                        core.publisherLent.store(true, ordering: .relaxed)
                    }
                }
                return true
            }
            if parked {
                park(timeout: parkTimeout())
                core.takePublisherSocket()
            }
        }
        shutDown()
    }

    /// Looped back: hands every post taken from the mailbox so far to the local subscriptions,
    /// unless a full one holds them back (`readingPaused`: they wait, as in `sendPending`, which
    /// sends them to ZeroMQ afterwards).
    private func deliverTakenPostsLocally() {
        while !receiver.readingPaused && posts.deliverLocally(atMost: Self.batchLimit, to: &receiver) {
            receiver.flush()
        }
    }

    /// Runs the jobs of tasks on the bus's executor that are queued now; returns whether any ran.
    private func runJobs(_ jobs: inout [UnownedJob]) -> Bool {
        // A job queued after this look is seen by the parking check (under the lock) or next round.
        guard core.jobsQueued.load(ordering: .acquiring) else { return false }
        core.mailbox.withLock { box in
            swap(&box.jobs, &jobs)
            core.jobsQueued.store(false, ordering: .relaxed)
        }
        guard !jobs.isEmpty else { return false }
        let executor = self.executor.asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
        jobs.removeAll(keepingCapacity: true)
        return true
    }

    /// How long the loop may sleep: until the next wait's deadline, at most 25 ms while a
    /// memory limit is kept (a message a peer never finishes grows inside libzmq, unseen here),
    /// at most 100 ms while a kept budget has subscribers to watch (posting threads send
    /// while it sleeps), and 2 ms while it holds back for one past its budget.
    private func parkTimeout() -> Int {
        var timeout = -1
        if configuration.maximumResidentMemory != nil && !sockets.boundEndpoints.isEmpty {
            timeout = Int(MemoryGuardTiming.checkIntervalMilliseconds)
        }
        if let watch = budgetWatchTimeout { timeout = timeout < 0 ? watch : min(timeout, watch) }
        for deadline in [waiters.nextDeadline, receiver.nextGapDeadline].compactMap({ $0 }) {
            let untilDeadline = Timestamps.milliseconds(until: deadline)
            timeout = timeout < 0 ? untilDeadline : min(timeout, untilDeadline)
        }
        if let joined = publisherSide.nextJoinDeadline {
            // Wall clock, as the presence times: rounded up, so the look comes after it.
            let now = Timestamps.wallClockNanoseconds()
            let untilJoined = joined > now ? Int(clamping: (joined - now + 999_999) / 1_000_000) : 0
            timeout = timeout < 0 ? untilJoined : min(timeout, untilJoined)
        }
        return timeout
    }

    /// Sleeps in poll(2) on the wake-up eventfd and the `ZMQ_FD` of every socket it reads, for
    /// `timeout` ms (-1: until something happens).
    ///
    /// Not `zmq_poll`: it looks at every socket's `ZMQ_EVENTS` (a command round of libzmq's: a
    /// `getpid` and a `poll` each) once before a zero-timeout poll, again before the real one and
    /// again after it, ten look-ups for one sleep of a bus with a SUB and two monitors, and the
    /// round after the wake reads each socket anyway. Here a socket is looked at once before the
    /// sleep, which is what `ZMQ_FD`'s edge needs (a message already queued does not signal it), and
    /// not at all when its last use drained it: the monitors, which are only ever read until empty
    /// (`readHandshakeFailures`), so their descriptor signals the next event.
    func park(timeout: Int, includePublisher: Bool = true) {
        var descriptors: [pollfd] = []
        descriptors.reserveCapacity(8)
        descriptors.append(pollfd(fd: core.wake.fileDescriptor, events: Int16(POLLIN), revents: 0))
        var lookedAt: [Socket] = []
        if includePublisher {
            // Lent to posting threads, the XPUB is watched through its signal fd: looking at the
            // socket itself would use it at the same time as a poster's send.
            if let publisherSignal {
                descriptors.append(pollfd(fd: publisherSignal, events: Int16(POLLIN), revents: 0))
            } else {
                lookedAt.append(contentsOf: sockets.publishers)
            }
        }
        if !receiver.readingPaused { lookedAt.append(contentsOf: sockets.subscribers) }
        do {
            for socket in lookedAt {
                // Something is queued already: no sleep, the next round reads it.
                if try socket.get(.events) & Int32(PollEvents.readable.rawValue) != 0 { return }
                descriptors.append(pollfd(fd: try socket.get(.fileDescriptor), events: Int16(POLLIN), revents: 0))
            }
        } catch {
            record(error, "looking at a socket before sleeping")
            if !contextTerminated { usleep(10_000) }
            return
        }
        let firstMonitor = descriptors.count
        for monitor in sockets.handshakeMonitors { appendDescriptor(of: monitor.reader, to: &descriptors) }
        for monitor in sockets.acceptMonitors { appendDescriptor(of: monitor.reader, to: &descriptors) }
        if contextTerminated { return }
        let count = descriptors.count
        let result = descriptors.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t(count), Int32(clamping: timeout)) }
        if result < 0 {
            // EINTR: a signal, the next round looks again. Anything else must not become a busy loop.
            if errno != EINTR { usleep(10_000) }
            return
        }
        // Only when it fired: woken by a socket, reading the eventfd would be one more syscall
        // between the wake-up and the message (a later signal makes the next poll return at once).
        if descriptors[0].revents != 0 { core.wake.drain() }
        // The monitors are read when one signalled, or a wait ran out (a look now and then anyway).
        if result == 0 || descriptors[firstMonitor...].contains(where: { $0.revents != 0 }) { roundsUntilHandshakeCheck = 0 }
    }

    /// Adds a drained socket's `ZMQ_FD` (a failure to read it, the socket closing, is recorded
    /// and makes the next round read the monitors).
    private func appendDescriptor(of socket: Socket, to descriptors: inout [pollfd]) {
        do {
            descriptors.append(pollfd(fd: try socket.get(.fileDescriptor), events: Int16(POLLIN), revents: 0))
        } catch {
            record(error, "reading a monitor's descriptor")
            roundsUntilHandshakeCheck = 0
        }
    }

    // MARK: Commands and waits

    private func handle(_ command: BusCommand) {
        assertOnLoopThread()
        switch command {
        case .addSubscription(let storage):
            addSubscription(storage)
        case .removeSubscription(let id):
            guard let storage = receiver.remove(id: id) else { return }
            forgetSnapshot(of: storage)
            perform(topics.remove(storage.pattern))
            receiver.resumeReadingUnlessFull()
        case .addWaiter(let request, let continuation):
            continuations[request.id] = continuation
            perform(waiters.add(request, facts: facts(for: request)))
        case .cancelWaiter(let id):
            perform(waiters.cancel(id: id))
        case .resumeReading:
            receiver.resumeReadingUnlessFull()
        }
    }

    // MARK: Carrying out actions

    func perform(_ actions: [WaiterStateMachine.Action]) {
        assertOnLoopThread()
        for action in actions {
            switch action {
            case .subscribeToken(let topic):
                guard !sockets.subscribers.isEmpty else { continue }
                do {
                    for subscriber in sockets.subscribers { try subscriber.subscribe(topic) }
                } catch {
                    record(error, "subscribing a readiness token")
                    if let id = waiters.pending.first(where: { $0.tokenTopic == topic })?.id {
                        perform(waiters.tokenFailed(id: id, .transport(error)))
                    }
                }
            case .unsubscribeToken(let topic):
                do {
                    for subscriber in sockets.subscribers { try subscriber.unsubscribe(topic) }
                } catch {
                    record(error, "unsubscribing a readiness token")
                }
            case .resume(let id, let error):
                // Whoever awaited this may read `stats` next: let it see the state that resolved the wait.
                publishStats()
                continuations.removeValue(forKey: id)?.resume(returning: error.map { .failure($0) } ?? .success(()))
            }
        }
    }

    func perform(_ actions: [PublisherStateMachine.Action]) {
        assertOnLoopThread()
        for action in actions {
            switch action {
            case .changeInterest(let changes):
                core.changeInterest { interest in
                    for change in changes { interest.changeRemote(change.prefix, subscribed: change.subscribed) }
                }
            case .send(let frame):
                // A token's echo the XPUB cannot take now is lost like any message at a full
                // subscriber; the subscriber's `ready` then times out and says so.
                for publisher in sockets.publishers {
                    do {
                        // A binding publisher's budget counts every byte its XPUB sends.
                        if try publisher.sendIfReady(frame) { posts.countSentBeside(frameBytes: frame.count) }
                    } catch {
                        record(error, "echoing a readiness token")
                    }
                }
            case .subscribersChanged:
                perform(
                    waiters.subscribersChanged(
                        count: { publisherSide.subscriberCount(matching: $0) },
                        exactlySubscribed: { publisherSide.isSubscribed(exactly: $0) },
                        joinedCount: { self.publisherSide.subscriberCount(matching: $0, joinedOnly: true) }))
            }
        }
    }

    /// Returns false when the SUB socket refused a subscription (recorded in `stats`).
    @discardableResult
    func perform(_ actions: [SubscriberTopics.Action]) -> Bool {
        assertOnLoopThread()
        var succeeded = true
        for action in actions {
            do {
                switch action {
                case .subscribe(let topic): for subscriber in sockets.subscribers { try subscriber.subscribe(topic) }
                case .unsubscribe(let topic): for subscriber in sockets.subscribers { try subscriber.unsubscribe(topic) }
                case .localSubscription(let prefix, let topic, let subscribed):
                    perform(publisherSide.localSubscriptionChanged(prefix: prefix, presenceTopic: topic, subscribed: subscribed))
                case .releaseLocalInterest(let prefix):
                    core.changeInterest { $0.changeLocal(prefix, subscribed: false) }
                }
            } catch {
                record(error, "changing a subscription")
                succeeded = false
            }
        }
        return succeeded
    }

    /// The one place socket errors go: a terminated context ends the loop; anything else is
    /// counted, with its text, in `stats`.
    func record(_ error: ZMQError, _ doing: String) {
        if error.kind == .contextTerminated {
            contextTerminated = true
            return
        }
        stats.socketErrors += 1
        stats.lastSocketError = "\(doing): \(error)"
    }
}
