#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

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
    /// The budget's side (`SubscriberBudgetSide`, shared with a binding bus): the stall watch ten
    /// times a second (a stopped subscriber's queue passes its budget by at most a tenth of a
    /// second of traffic, 15 MB at 500,000 notifications of 300 B a second), the slow-subscriber
    /// decisions when the backend refuses, and the sends past full queues.
    private var budget: SubscriberBudgetSide
    private let onEvent: (@Sendable (BrokerEvent) -> Void)?
    /// Readers of the sides' connection events (empty with CURVE: the ZAP handler reads them).
    private let monitorReaders: [Socket]
    private let connections: ConnectionTracker
    /// The largest subscription message forwarded to publishers (bytes).
    private let forwardableSubscriptionSize: Int
    /// The memory guard (nil: no resident-memory limit), and the endpoints it re-binds to drop
    /// every connection.
    private var memoryGuard: MemoryGuardStateMachine?
    private let boundEndpoints: [(socket: Socket, endpoint: String)]
    /// The notification read from the frontend and not yet taken by the backend.
    private var held = MessageBatch(capacity: 4)
    private var heldBytes = 0
    /// The notifications the held message carries (a batch frame's declared count, else 1).
    private var heldNotifications = 1
    /// Bytes sent to subscribers as their connections carry them (ZMTP's framing, and CURVE's
    /// box), for `SubscriberBacklogWatch`: exact, since over TCP what a peer acknowledged is
    /// subtracted from it, and an error per frame would add up between two empty queues.
    private var wireBytesToSubscribers: UInt64 = 0
    private let curve: Bool
    private var subscription = MessageBatch(capacity: 2)
    private var stats = BrokerStatistics()
    /// Recent end-of-stream records, replayed for subscribers that were stopped when they passed.
    private var endOfStream = EndOfStreamReplay()
    /// Which frontend connection (with CURVE: which key) each publisher id belongs to.
    private var ownership: PublisherOwnership
    /// With CURVE an id is bound to the client's key (the `User-Id` the ZAP handler gives it).
    private let bindsIDsToKeys: Bool
    /// Refusals since the last report, and when that was (monotonic ns; nil: never).
    private var foreignSinceReport: UInt64 = 0
    private var lastForeignReport: UInt64?
    /// Retained values (NBP-1 §18) and the snapshots new subscriptions asked for.
    private var retained: RetainedStore
    /// Where each retained change is written (`BrokerConfiguration.stateDirectory`); nil: memory only.
    private let retainedLog: RetainedLog?
    private var snapshots = RetainedSnapshotQueue()
    /// The version 1 frame of a batch's kept record is written here (`rememberRetained`).
    private var retainedScratch: [UInt8] = []
    /// When the backend first refused the snapshot frame at the head (monotonic ns; nil: it did not).
    private var snapshotRefusedSince: UInt64?
    /// How long the head snapshot may be refused before it is dropped: 5 s, or ten patiences.
    private let snapshotPatience: UInt64
    /// Evictions since the last report, and when that was (monotonic ns; nil: never).
    private var evictionsSinceReport: UInt64 = 0
    private var lastEvictionReport: UInt64?
    /// Memory was given back since the last message moved, which was at `idleSince`.
    private var trimmedSinceTraffic = false
    private var idleSince: UInt64 = 0
    /// Messages moved per side before looking at the other side and the stop flag again.
    private static let roundLimit = 512
    /// Whether the last `forwardSubscriptions` / `forwardNotifications` read its socket until it
    /// would block (not stopped by `roundLimit`, a hold, or a refused send).
    private var backendDrained = false
    private var frontendDrained = false
    /// When the monitors were last read (monotonic ns), and whether the last sleep saw one signal.
    private var monitorsReadAt: UInt64 = 0
    private var monitorSignalled = true
    /// How long traffic may keep the loop from reading the monitors: they are read when their
    /// descriptor signals, after every sleep that ran out, and at least this often while the
    /// loop never sleeps (libzmq's I/O thread blocks on a full monitor: 500 events queued).
    private static let monitorInterval: UInt64 = 1_000_000
    /// `Broker`'s `idleSpin`: after traffic, look again (yielding the core) for this long before
    /// sleeping in `zmq_poll`, so the next message needs no wake-up of this thread (latency).
    private let spinNanoseconds: UInt64
    /// `BrokerConfiguration.drainTimeout`, in nanoseconds.
    private let drainNanoseconds: UInt64
    /// The longest the loop waits for work before starting a round anyway (ms): its heartbeat.
    static let heartbeatInterval = 1_000
    /// The same while `SubscriberAdmissionGate` paces handshakes by the age of the last round: well
    /// below its `healthyAge`, so an idle loop reads as well.
    static let pacedHeartbeatInterval = 100
    private let heartbeat: Int

    init(
        frontend: Socket, backend: Socket, shared: BrokerShared, configuration: BrokerConfiguration,
        retained: RetainedStore, retainedLog: RetainedLog?,
        boundEndpoints: [(socket: Socket, endpoint: String)], monitorReaders: [Socket], connections: ConnectionTracker,
        pacedHandshakes: Bool = false, onEvent: (@Sendable (BrokerEvent) -> Void)?
    ) throws(ZMQError) {
        self.heartbeat = pacedHandshakes ? Self.pacedHeartbeatInterval : Self.heartbeatInterval
        let patienceNanoseconds = Timestamps.boundedNanoseconds(configuration.slowSubscriberPatience)
        self.spinNanoseconds = Timestamps.boundedNanoseconds(configuration.idleSpin)
        self.snapshotPatience = max(5_000_000_000, patienceNanoseconds.multipliedReportingOverflow(by: 10).partialValue)
        self.drainNanoseconds = Timestamps.boundedNanoseconds(configuration.drainTimeout)
        self.monitorReaders = monitorReaders
        self.connections = connections
        self.forwardableSubscriptionSize = configuration.maximumSubscriptionSize - 64
        self.frontend = frontend
        self.backend = backend
        self.shared = shared
        // The quiet spell that ends an episode, and the longest hold of a subscriber past its
        // budget that is slow but moving: at least 10 s, and 20 patiences. Stalled subscribers are
        // named only when a budget says who is past it: without one a full queue is just --hwm
        // messages, which a healthy subscriber reaches too.
        self.budget = SubscriberBudgetSide(
            policy: SubscriberBudgetPolicy(budget: configuration.subscriberBudget, patienceNanoseconds: patienceNanoseconds),
            connections: connections)
        self.memoryGuard = configuration.memoryLimit.map { MemoryGuardStateMachine(limitBytes: $0) }
        self.bindsIDsToKeys = configuration.security != nil
        // The listed publisher keys' tagged ids are theirs alone (NBP-1 §15.3). A key that does
        // not decode was refused when the list was loaded; it tags nothing here.
        self.ownership = PublisherOwnership(
            listedKeys: (configuration.security?.allowedPublishers.names.keys).map { keys in
                keys.compactMap { key in (try? Z85.decode(key)).map { (key, $0) } }
            } ?? [])
        self.curve = configuration.security != nil
        self.boundEndpoints = boundEndpoints
        self.onEvent = onEvent
        self.retained = retained
        self.retainedLog = retainedLog
        stats.retainedNames = retained.count
        stats.retainedBytes = retained.bytes
        if let loaded = retainedLog?.loadedAtStart, loaded.damageOffset != nil {
            stats.retainedStateDamaged = 1
            stats.retainedStateBytesCut = UInt64(loaded.skippedBytes)
        }
        try SubscriberBudgetSide.refusesAtFullQueues(backend, true)
        try backend.set(.sendTimeout, .milliseconds(1))
        // What the start read back (retained values, a damaged --state log) shows before any traffic.
        publishStatistics()
    }

    /// Forwards until the broker is asked to stop or the context ends.
    func run() {
        // Two pollers: while a notification is held the frontend is not watched (reading it
        // would be pointless) and nothing is waited for here: the retry of the held one waits
        // (a blocking send with a 1 ms timeout wakes as soon as a subscriber makes room; libzmq's
        // XPUB cannot be polled for room), and this only looks at subscriptions and the stop flag.
        var holding = Poller()
        holding.register(backend)
        let holdingWake = holding.register(fileDescriptor: shared.wake.fileDescriptor)
        for reader in monitorReaders { holding.register(reader) }
        while !shared.stopRequested.load(ordering: .acquiring) {
            let roundStart = Timestamps.monotonicNanoseconds()
            shared.lastRound.store(roundStart, ordering: .relaxed)
            // Each read of an empty monitor is a command round of libzmq's (a `poll` and a
            // `getpid`): read when one signalled, or now and then under traffic.
            if monitorSignalled || roundStart &- monitorsReadAt >= Self.monitorInterval {
                monitorSignalled = false
                monitorsReadAt = roundStart
                readConnectionEvents()
            }
            forgetClosedPublishers()
            checkMemory()
            watchSubscribers()
            replayEndOfStreamRecords()
            if shared.retainedListingWanted.load(ordering: .acquiring) { answerRetainedListings() }
            do {
                let moved = try forwardSubscriptions() + sendSnapshots() + forwardNotifications()
                if moved > 0 {
                    trimmedSinceTraffic = false
                    idleSince = Timestamps.monotonicNanoseconds()
                    publishStatistics()
                }
                // Both sides read until they would block and nothing waits to go: no second round
                // before sleeping (two command rounds of libzmq's saved for every sparse message);
                // `sleep` looks at both sockets' ZMQ_EVENTS before it sleeps, so what came since
                // is read at once.
                let settled = frontendDrained && backendDrained && held.isEmpty && snapshots.isEmpty
                if moved > 0 && (!settled || spinNanoseconds > 0) {
                    continue
                } else if !held.isEmpty {
                    try holding.poll(timeoutMilliseconds: 0)
                    if holding.ready(at: holdingWake).contains(.readable) { shared.wake.drain() }
                } else if budget.policy.mustHold(wireSent: wireBytesToSubscribers) {
                    // Holding back for a subscriber past its budget: the publishers are not read
                    // until the next look (2 ms) finds it within.
                    try holding.poll(timeoutMilliseconds: Int(SubscriberBudgetPolicy.holdCheckInterval / 1_000_000))
                    if holding.ready(at: holdingWake).contains(.readable) { shared.wake.drain() }
                } else if spinNanoseconds > 0, Timestamps.monotonicNanoseconds() &- idleSince < spinNanoseconds {
                    // Just after traffic, with the low-latency setting: look again at once.
                    sched_yield()
                } else {
                    // Idle: after 10 s without traffic, give freed memory back to the system once
                    // (glibc keeps what a flood of connections or a big burst allocated).
                    // With a memory limit, wake every 25 ms to look at it: a message a peer
                    // never finishes grows inside libzmq, where this loop sees no traffic.
                    // Never longer than the heartbeat, so a stuck loop shows (`Broker.forwardingLoopAge`);
                    // the trim is looked at on each of these wake-ups.
                    var timeout = heartbeat
                    if memoryGuard != nil { timeout = min(timeout, Int(MemoryGuardTiming.checkIntervalMilliseconds)) }
                    if let due = endOfStream.nextReplay {
                        let now = Timestamps.monotonicNanoseconds()
                        let wait = due > now ? Int(min(due - now, 10_000_000_000) / 1_000_000) + 1 : 0
                        timeout = min(timeout, wait)
                    }
                    let ready = try sleep(timeoutMilliseconds: timeout)
                    if ready == 0, !trimmedSinceTraffic, Timestamps.monotonicNanoseconds() >= idleSince &+ 10_000_000_000 {
                        releaseFreeMemory()
                        trimmedSinceTraffic = true
                    }
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
        if shared.stopRequested.load(ordering: .acquiring) { drainOnStop() }
        // A clean stop leaves the log holding only the live values (and lets go of its lock).
        retainedLog?.close(retained)
        held.removeAll()
        subscription.removeAll()
        publishStatistics()
    }

    /// Sleeps in poll(2) on the wake-up eventfd, the frontend's and backend's `ZMQ_FD` and the
    /// monitors' for `timeoutMilliseconds` (-1: until something happens); returns how many
    /// descriptors fired (0: the time ran out), or 1 without sleeping when a socket has a message
    /// queued already.
    ///
    /// Not `zmq_poll` (as `BusEventLoop.park`): that looks at every socket's `ZMQ_EVENTS` (a
    /// command round of libzmq's: a `poll` and a `getpid` each) before a zero-timeout poll, again
    /// before the real one and again after it, four sockets here. `ZMQ_FD` signals an edge, so a
    /// socket is looked at once before the sleep (a message already queued does not signal it);
    /// a monitor is not, since its last read drained it (`readConnectionEvents`).
    private func sleep(timeoutMilliseconds: Int) throws(ZMQError) -> Int {
        var descriptors: [pollfd] = []
        descriptors.reserveCapacity(3 + monitorReaders.count)
        descriptors.append(pollfd(fd: shared.wake.fileDescriptor, events: Int16(POLLIN), revents: 0))
        for socket in [frontend, backend] {
            if try socket.get(.events) & Int32(PollEvents.readable.rawValue) != 0 { return 1 }
            descriptors.append(pollfd(fd: try socket.get(.fileDescriptor), events: Int16(POLLIN), revents: 0))
        }
        let firstMonitor = descriptors.count
        for reader in monitorReaders {
            descriptors.append(pollfd(fd: try reader.get(.fileDescriptor), events: Int16(POLLIN), revents: 0))
        }
        let count = descriptors.count
        let result = descriptors.withUnsafeMutableBufferPointer {
            Glibc.poll($0.baseAddress, nfds_t(count), Int32(clamping: timeoutMilliseconds))
        }
        if result < 0 {
            // EINTR: the next round looks again. Anything else is the descriptors gone (the
            // context ending, which the next socket call reports): not a busy loop meanwhile.
            if errno != EINTR { usleep(1_000) }
            monitorSignalled = true
            return 1
        }
        if descriptors[0].revents != 0 { shared.wake.drain() }
        // A monitor that signalled, or a sleep that ran out (a look now and then anyway).
        if result == 0 || descriptors[firstMonitor...].contains(where: { $0.revents != 0 }) { monitorSignalled = true }
        return Int(result)
    }

    /// A stop hands on what the broker already took, for up to `drainTimeout`: nothing more is
    /// read from the publishers; the held notification is sent (waiting for room, 1 ms a try);
    /// and the backend keeps what it queues for the rest of the time when it closes (its linger),
    /// so libzmq hands it to the subscribers while the context ends (`Broker` times that, and
    /// says whether the time ran out). Before, the backend closed with no linger: a SIGTERM
    /// during a flood dropped what slow subscribers had not read yet, uncounted (issue 38).
    private func drainOnStop() {
        let deadline = Timestamps.monotonicNanoseconds() &+ drainNanoseconds
        while !held.isEmpty, Timestamps.monotonicNanoseconds() < deadline {
            do {
                if try backend.sendParts(&held, mode: .blocking) { delivered() }
            } catch {
                break  // the context is ending: nothing more can be sent
            }
        }
        if !held.isEmpty { stats.undeliveredAtStop &+= UInt64(heldNotifications) }
        let now = Timestamps.monotonicNanoseconds()
        let remaining = deadline > now ? deadline - now : 0
        // Fails only on a closed socket or an ended context, where nothing is queued any more.
        let lingerMilliseconds = (remaining + 999_999) / 1_000_000
        try? backend.set(.linger, .milliseconds(Int64(lingerMilliseconds)))
        shared.drainLinger.store(lingerMilliseconds * 1_000_000, ordering: .relaxed)
    }

    /// Hands the sides' monitor events (connections accepted and gone) to the tracker; libzmq
    /// blocks its own I/O thread on a monitor that is not read, so they are read every round.
    private func readConnectionEvents() {
        for (index, reader) in monitorReaders.enumerated() {
            // The readers are the frontend's then the backend's (see `Broker.init`).
            let side: BrokerConnection.Side = index == 0 ? .publisher : .subscriber
            // Would-block ends the read; any other error means the context is ending, which the
            // forwarding loop sees on its own sockets.
            while let frames = try? reader.receiveMultipart(mode: .dontWait) {
                if let event = SocketEvent(frames: frames) { connections.record(event, side: side) }
            }
        }
    }

    /// Forgets the publisher ids of frontend connections that ended (their events were read by
    /// this thread, or by the ZAP handler's with CURVE).
    private func forgetClosedPublishers() {
        let closed = connections.takeClosedPublishers()
        if closed.overflowed { ownership.forgetAll() }
        for descriptor in closed.descriptors { ownership.connectionClosed(descriptor: descriptor) }
    }

    /// Whether the held single-frame message may pass: it carries no publisher id (not NBP/1, or
    /// from inproc, where libzmq names no connection), or one its connection owns (or takes now).
    /// A refusal is counted and reported; see `PublisherOwnership`.
    private func claimsItsOwnPublisherID() -> Bool {
        guard let id = held.withMessageBytes(at: 0, { EnvelopeCodec.publisherID(inEncodedFrame: $0) }),
            let descriptor = held.sourceDescriptor(at: 0)
        else { return true }
        let claimant = PublisherOwnership.Claimant(
            descriptor: descriptor, key: bindsIDsToKeys ? held.property("User-Id", at: 0) : nil)
        var verdict = ownership.check(id, from: claimant)
        if case .refused = verdict {
            // The owner may have gone a moment ago: read the closings now, and ask the kernel
            // whether its peer hung up (a publisher that dropped a frozen broker and dialled again
            // is the same publisher; libzmq reports the old connection's end only once it has
            // read all it holds).
            readConnectionEvents()
            forgetClosedPublishers()
            verdict = ownership.check(id, from: claimant)
            if case .refused(let owner) = verdict, owner.key == nil, Self.peerHasHungUp(owner.descriptor) {
                ownership.transfer(id, to: claimant)
                verdict = .accepted
            }
        }
        stats.ownedPublisherIDs = ownership.count
        guard case .refused(let owner) = verdict else { return true }
        stats.foreignPublisherIDFrames &+= 1
        foreignSinceReport &+= 1
        let now = Timestamps.monotonicNanoseconds()
        if lastForeignReport.map({ now &- $0 >= 10_000_000_000 }) ?? true {
            lastForeignReport = now
            onEvent?(
                .foreignPublisherIDRefused(
                    publisherID: id, claimant: connections.connection(side: .publisher, descriptor: descriptor),
                    owner: connections.connection(side: .publisher, descriptor: owner.descriptor)
                        ?? owner.key.flatMap { key in
                            // Refused by the id's key tag: its key's connection, if one is open.
                            connections.snapshot().first { $0.side == .publisher && $0.curveKey == key }
                        },
                    frames: foreignSinceReport))
            foreignSinceReport = 0
        }
        publishStatistics()
        return false
    }

    /// Whether the peer of a connection libzmq holds has closed its end (or the descriptor is no
    /// longer open): a look at the socket's state, without reading from it.
    private static func peerHasHungUp(_ descriptor: Int32) -> Bool {
        ZeroMQ.peerHasHungUp(descriptor: descriptor)
    }

    /// Sends the end-of-stream records due for a replay, past any full subscriber (never waiting).
    private func replayEndOfStreamRecords() {
        guard let due = endOfStream.nextReplay, Timestamps.monotonicNanoseconds() >= due else { return }
        for frame in endOfStream.takeDue(now: Timestamps.monotonicNanoseconds()) {
            // Past full queues; the replay is best effort.
            if (try? SubscriberBudgetSide.sendPast(on: backend, { () throws(ZMQError) in try backend.send(frame, mode: .dontWait) })) != nil {
                stats.endOfStreamReplays &+= 1
            }
        }
        stats.endOfStreamReplayBytes = endOfStream.heldBytes
    }

    /// With a memory limit: past it, give freed memory back and, if that is not enough, drop
    /// every connection (`MemoryGuardStateMachine`; the same guard as a binding bus's).
    private func checkMemory() {
        guard let limit = memoryGuard?.limitBytes,
            let resident = memoryGuard?.check(now: Timestamps.monotonicNanoseconds()) ?? nil
        else { return }
        stats.memoryLimitResets &+= 1
        // libzmq reports none of the connections it ends here: no owner is known to be there.
        ownership.forgetAll()
        for (socket, endpoint) in boundEndpoints {
            do {
                try socket.rebind(endpoint) { connections.forgetConnections(acceptedOn: endpoint) }
            } catch {
                stats.forwardingErrors &+= 1
                onEvent?(.rebindFailed(endpoint: endpoint))
            }
        }
        publishStatistics()
        onEvent?(.memoryLimitReached(residentBytes: resident, limitBytes: limit))
    }

    private func publishStatistics() {
        stats.backpressureWaits = budget.counters.waits
        stats.slowSubscriberEpisodes = budget.counters.slowEpisodes
        stats.sentPastSlowSubscribers = budget.counters.sentPast
        stats.stalledSubscribersDisconnected = budget.counters.stalledDisconnected
        stats.slowSubscribersDisconnected = budget.counters.slowDisconnected
        if let retainedLog { stats.retainedStateWriteFailures = retainedLog.writeFailures }
        let snapshot = stats
        shared.statistics.withLock { $0 = snapshot }
    }

    /// Subscription messages from subscribers go up to the publishers (the XSUB sends them without
    /// a mark, so it never refuses one).
    private func forwardSubscriptions() throws(ZMQError) -> Int {
        var moved = 0
        backendDrained = false
        while moved < Self.roundLimit {
            guard let bytes = try receiveWholeMessage(from: backend, into: &subscription) else {
                backendDrained = true
                break
            }
            stats.subscriptionMessages &+= 1
            if subscription.count == 1 {
                subscription.withMessageBytes(at: 0) { shared.subscriptions.apply($0) }
            }
            if subscription.count == 1, subscription.withMessageBytes(at: 0, { answerSnapshotRequest($0) }) {
                // A request for retained values is this broker's to answer, not the publishers'.
            } else if bytes > forwardableSubscriptionSize {
                // Accepted here, but a publisher (or an upstream broker) receives a replayed
                // subscription as a ZMTP command 10 bytes longer than the message, and would drop
                // the connection over it at every reconnection: not forwarded, counted.
                stats.subscriptionsNotForwarded &+= 1
            } else if try !frontend.sendParts(&subscription) {
                stats.forwardingErrors &+= 1
            }
            subscription.removeAll()
            moved += 1
        }
        return moved
    }

    /// Notifications from publishers go down to the subscribers, each whole or held.
    private func forwardNotifications() throws(ZMQError) -> Int {
        var moved = 0
        frontendDrained = false
        while moved < Self.roundLimit {
            if held.isEmpty, budget.policy.mustHold(wireSent: wireBytesToSubscribers) {
                // A subscriber may be past its budget: look (if not looked at just now); while one
                // is past it and moving, nothing new is read from the publishers (flow control).
                watchSubscribers()
                if budget.policy.mustHold(wireSent: wireBytesToSubscribers) { break }
            }
            if held.isEmpty {
                guard let bytes = try receiveWholeMessage(from: frontend, into: &held) else {
                    frontendDrained = true
                    break
                }
                heldBytes = bytes
                // The batch header's count, read without decoding (NBP-1 §2.3): counts people
                // read as notifications stay notifications.
                heldNotifications =
                    held.count == 1 ? held.withMessageBytes(at: 0) { EnvelopeCodec.notificationCount(inEncodedFrame: $0) } : 1
                stats.notificationsFromPublishers &+= UInt64(heldNotifications)
                stats.fromPublishers &+= 1
                stats.bytesFromPublishers &+= UInt64(bytes)
                if held.count == 1 {
                    // A frame speaking for another connection's publisher goes nowhere, and is
                    // never kept for a replay either.
                    guard claimsItsOwnPublisherID() else {
                        held.removeAll()
                        heldBytes = 0
                        moved += 1
                        continue
                    }
                    switch endOfStream.remember(held, now: Timestamps.monotonicNanoseconds()) {
                    case .notKept: break
                    case .kept(let evicted): stats.endOfStreamRecordsEvicted &+= UInt64(evicted)
                    case .tooLarge: stats.endOfStreamRecordsTooLarge &+= 1
                    }
                    stats.endOfStreamReplayBytes = endOfStream.heldBytes
                    if retained.isEnabled { rememberRetained() }
                }
            }
            // A held notification was refused before: this try waits up to 1 ms for room.
            if try backend.sendParts(&held, mode: budget.policy.waiting ? .blocking : .dontWait) {
                if let ended = budget.accepted(now: Timestamps.monotonicNanoseconds()) { onEvent?(ended) }
                delivered()
                moved += 1
                continue
            }
            let now = Timestamps.monotonicNanoseconds()
            // A patience run out disconnects the subscribers that took nothing since the wait
            // began (see `StalledConnectionFinder`); libzmq sees each connection end, drops its
            // queue and takes it out of the backend, so the held notification goes to everyone
            // else, and the subscriber reconnects and counts what it missed as a gap. libzmq owns
            // the descriptors: one reused by a new connection since the wait began has another
            // progress (a new TCP connection's count starts again; over ipc its peer is another
            // process), so it is not taken for a stalled one.
            switch budget.refused(now: now, report: { onEvent?($0) }) {
            case .retry(let waitBegan):
                // --stats shows a wait while it lasts.
                if waitBegan { publishStatistics() }
                // The next try of the held notification waits up to 1 ms for room (`policy.waiting`).
                return moved
            case .sendPast:
                // For this one send the XPUB drops for full subscribers instead of refusing.
                // Counted in notifications (a batch frame as its records).
                let notifications = heldNotifications
                let sent = try SubscriberBudgetSide.sendPast(on: backend) { () throws(ZMQError) in try backend.sendParts(&held) }
                budget.sentPast(UInt64(notifications))
                if !sent { stats.forwardingErrors &+= 1 }
                delivered()
                moved += 1
            }
        }
        return moved
    }

    /// A subscription message that asks for retained values (NBP-1 §18): queues the snapshot and
    /// returns true (it is not forwarded); false for any other message. Its unsubscription is
    /// swallowed too.
    private func answerSnapshotRequest(_ message: UnsafeRawBufferPointer) -> Bool {
        guard message.count > 1, message[1] == 0, message.dropFirst().starts(with: RetainedSnapshot.requestPrefix) else {
            return false
        }
        guard message[0] == 1, let (reply, pattern) = RetainedSnapshot.parseRequest(message.dropFirst()) else { return true }
        let (entries, expired) = retained.frames(matching: pattern, now: Timestamps.monotonicNanoseconds())
        stats.retainedExpirations &+= UInt64(expired)
        stats.retainedNames = retained.count
        stats.retainedBytes = retained.bytes
        if snapshots.enqueue(
            reply: reply, entries: entries, takesAll: retained.isEnabled, now: Timestamps.wallClockNanoseconds())
        {
            stats.retainedSnapshots &+= 1
            stats.retainedNotificationsSent &+= UInt64(entries.count)
        }
        return true
    }

    /// Sends queued snapshot frames while the backend takes them (a full subscriber holds the
    /// queue until it makes room; the live traffic goes on meanwhile).
    private func sendSnapshots() throws(ZMQError) -> Int {
        var moved = 0
        while moved < Self.roundLimit, let frame = snapshots.next {
            guard try backend.sendIfReady(frame) else {
                // Its subscriber is full: the others' snapshots wait behind it for at most 5 s
                // (ten patiences when longer), then the rest of this one is dropped, counted.
                let now = Timestamps.monotonicNanoseconds()
                let since = snapshotRefusedSince ?? now
                snapshotRefusedSince = since
                if now &- since > snapshotPatience {
                    stats.retainedSnapshotsDropped &+= 1
                    _ = snapshots.dropHead()
                    snapshotRefusedSince = nil
                    continue
                }
                break
            }
            snapshotRefusedSince = nil
            _ = snapshots.sent()
            stats.toSubscribers &+= 1
            stats.bytesToSubscribers &+= UInt64(frame.count)
            wireBytesToSubscribers &+= SubscriberBacklogWatch.wireBytes(frame.count, parts: 1, curve: curve)
            moved += 1
        }
        return moved
    }

    /// Lists the retained values for the monitoring callers waiting (`/retainedz`). Values whose
    /// `retain-for` passed are dropped and counted as expirations first, as a snapshot drops them.
    private func answerRetainedListings() {
        for request in shared.takeRetainedListingRequests() {
            let (listing, expired) = retained.listing(limit: request.limit, now: Timestamps.monotonicNanoseconds())
            if expired > 0 {
                stats.retainedExpirations &+= UInt64(expired)
                stats.retainedNames = retained.count
                stats.retainedBytes = retained.bytes
                publishStatistics()
            }
            request.continuation.resume(returning: listing)
        }
    }

    /// Keeps the retained notifications of the held frame (one read from a publisher that owns
    /// its id), the retain bit read first without decoding. A version 1 frame is kept as it came
    /// (only its name, payload length and `retain-for` are read); of a batch, the records that
    /// change what is kept (every clear, the last of each run of values) are kept as the version
    /// 1 frames that carry them, written from their bytes.
    private func rememberRetained() {
        guard held.count == 1 else { return }
        let now = Timestamps.monotonicNanoseconds()
        var outcomes: [(RetainedStore.Outcome, name: String)] = []
        held.withMessageBytes(at: 0) { frame in
            guard let nameLength = try? EnvelopeCodec.nameLength(in: frame),  // not a valid frame: nothing to keep
                RetainedSnapshot.carriesRetain(frame, nameLength: nameLength),
                !ControlNames.isReserved(nameBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameLength]))
            else { return }
            if frame[nameLength + 1 + WireFormat.FixedHeaderOffset.version] == WireFormat.version {
                // A malformed frame keeps nothing (subscribers reject and count it themselves).
                guard let outcome = retained.remember(frame: frame, nameLength: nameLength, now: now) else { return }
                retainedLog?.recordChange(nameBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameLength]), store: retained)
                if outcome != .kept {
                    outcomes.append((outcome, name: String(decoding: frame[0..<nameLength], as: UTF8.self)))
                }
                return
            }
            // A batch: only the records that change what is kept (a run of one name's values
            // keeps its last), each written as a version 1 frame from its bytes, none decoded,
            // into one buffer reused from batch to batch (no allocation per batch).
            var scratch: [UInt8] = []
            swap(&scratch, &retainedScratch)
            defer { swap(&scratch, &retainedScratch) }
            _ = EnvelopeCodec.forEachRetainedFrameToKeep(inBatch: frame, validatedNameLength: nameLength, scratch: &scratch) { kept in
                guard let outcome = retained.remember(frame: kept, nameLength: nameLength, now: now) else { return }
                retainedLog?.recordChange(nameBytes: UnsafeRawBufferPointer(rebasing: kept[0..<nameLength]), store: retained)
                if outcome != .kept {
                    outcomes.append((outcome, name: String(decoding: frame[0..<nameLength], as: UTF8.self)))
                }
            }
        }
        var evicted = 0
        var lastName = ""
        for (outcome, name) in outcomes {
            switch outcome {
            case .kept: break
            case .cleared: stats.retainedClears &+= 1
            case .keptEvicting(let count, let name):
                evicted += count
                lastName = name
            case .tooLarge:
                evicted += 1
                lastName = name
            }
        }
        stats.retainedNames = retained.count
        stats.retainedBytes = retained.bytes
        guard evicted > 0 else { return }
        stats.retainedEvictions &+= UInt64(evicted)
        evictionsSinceReport &+= UInt64(evicted)
        // At most one log line every 10 s, with the count since the last.
        if let last = lastEvictionReport, now &- last < 10_000_000_000 { return }
        lastEvictionReport = now
        onEvent?(.retainedEvicted(count: evictionsSinceReport, lastName: lastName, names: retained.count, bytes: retained.bytes))
        evictionsSinceReport = 0
    }

    /// With a budget, ten times a second and sooner while holding back (`SubscriberBudgetPolicy`):
    /// disconnects the subscribers past their budget that take nothing (nobody waited for them)
    /// or that stayed past it for the longest hold; while one past it moves, the forwarder holds
    /// back. Those disconnected reconnect by themselves and count what they missed as gaps.
    private func watchSubscribers() {
        let before = budget.counters
        guard
            budget.lookIfDue(
                now: Timestamps.monotonicNanoseconds(), sent: stats.bytesToSubscribers, wireSent: wireBytesToSubscribers,
                report: { onEvent?($0) }) != nil
        else { return }
        if budget.counters != before { publishStatistics() }
    }

    /// Counts the held notification as sent and lets it go.
    private func delivered() {
        stats.toSubscribers &+= 1
        stats.bytesToSubscribers &+= UInt64(heldBytes)
        wireBytesToSubscribers &+= SubscriberBacklogWatch.wireBytes(heldBytes, parts: held.count, curve: curve)
        stats.notificationsToSubscribers &+= UInt64(heldNotifications)
        held.removeAll()
        heldBytes = 0
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
