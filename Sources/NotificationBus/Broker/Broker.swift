#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization
import ZeroMQ

/// `nbus broker`: an XSUB/XPUB forwarder between many publishers (frontend) and many
/// subscribers (backend). Frames pass through untouched; subscriptions flow upstream.
///
/// One thread, `nbus-proxy`, owns both sockets and runs `BrokerForwarder`. Each subscriber has a
/// budget in bytes (`BrokerConfiguration.subscriberBudget`, 64 MiB): within it nobody waits for
/// that subscriber, however long it pauses. A subscriber past its budget makes the broker hold the
/// notification (its publishers wait) for `slowSubscriberPatience`; then a subscriber that made no
/// progress at all is disconnected (it reconnects and counts its gap), and one that is merely slow
/// is sent past until it catches up (see `SlowSubscriberStateMachine`). With `BrokerSecurity`,
/// both sides are CURVE servers and a second thread, the ZAP handler, admits only the
/// allow-listed keys; it starts before the sides bind and stops after they close. A broker that is
/// dropped without `stop()` stops too.
public final class Broker: Sendable {
    /// The frontend endpoint, resolved (real port for `tcp://...:*`).
    public let frontendEndpoint: String
    /// The backend endpoint, resolved.
    public let backendEndpoint: String
    private let shared: BrokerShared
    private let thread: Mutex<pthread_t?>
    private let authentication: ZAPHandler?
    /// Without CURVE: the pace of subscriber handshakes (see `SubscriberAdmission`).
    private let admission: SubscriberAdmissionGate?
    private let tracker: ConnectionTracker

    /// Binds the configuration's frontend (for publishers) and backend (for subscribers) and
    /// starts forwarding; throws what `BrokerConfiguration.validate()` finds first.
    ///
    /// With `security`, both sides are CURVE servers that admit only the allow-listed keys;
    /// `onAuthentication` is called on the ZAP handler's thread for admissions and refusals,
    /// rate-limited per key.
    public init(_ configuration: BrokerConfiguration) throws(BusError) {
        try configuration.validate()
        // The retained values kept in `stateDirectory`, read back before anything binds: a
        // directory another broker holds stops this one here, with nothing bound.
        var retained = RetainedStore(maximumNames: configuration.retainedNames, maximumBytes: configuration.retainedBytes)
        var retainedLog: RetainedLog?
        if let directory = configuration.stateDirectory {
            retainedLog = try RetainedLog.open(directory: directory, into: &retained, logger: configuration.logger).0
        }
        let onEvent = configuration.eventHandler
        let onAuthentication = configuration.authenticationHandler
        let (frontend, backend, upstream) = (configuration.frontend, configuration.backend, configuration.upstream)
        let (highWaterMark, heartbeat, security) = (configuration.highWaterMark, configuration.heartbeat, configuration.security)
        let context: Context
        let wake: WakeSignal
        do {
            // Every message gets its own allocation: what the broker queues for a subscriber then
            // costs its bytes plus libzmq's per-message overhead, which the budget counts, instead
            // of a shared read buffer per message (see Context.init).
            context = try Context(ioThreads: 1, zeroCopyReceive: false)
            wake = try WakeSignal()
        } catch {
            throw .transport(error)
        }
        let shared = BrokerShared(wake: wake)
        self.shared = shared
        // Bound before the CURVE sockets bind, so no handshake ever finds no handler.
        var fileLimit = rlimit()
        let connections = ConnectionTracker(
            fileLimit: getrlimit(Int32(RLIMIT_NOFILE.rawValue), &fileLimit) == 0 ? UInt64(fileLimit.rlim_cur) : nil,
            onEvent: onEvent)
        self.tracker = connections
        let authentication = try security.map { security throws(BusError) in
            try ZAPHandler(
                context: context,
                allowLists: [.publishers: security.allowedPublishers, .subscribers: security.allowedSubscribers],
                onEvent: onAuthentication,
                onConnectionEvent: { event, domain in connections.record(event, side: domain == .publishers ? .publisher : .subscriber) },
                onAdmission: { key, address, domain in
                    connections.admitted(key: key, address: address, side: domain == .publishers ? .publisher : .subscriber)
                })
        }
        self.authentication = authentication
        // Without CURVE the backend's handshakes still pass a ZAP handler, which paces them by the
        // forwarding loop's health (issue 38: departures cost it a walk of every subscription).
        let admission: SubscriberAdmissionGate?
        if security == nil {
            admission = try SubscriberAdmissionGate(context: context) {
                let last = shared.lastRound.load(ordering: .relaxed)
                let now = Timestamps.monotonicNanoseconds()
                return now > last ? now - last : 0
            }
        } else {
            admission = nil
        }
        self.admission = admission
        // Sockets made, bound and monitored here, on the caller's thread (quick, non-blocking
        // calls), then handed whole to the forwarding thread: opening a broker never waits for
        // another thread, so it never blocks a cooperative one (ZAPHandler does the same).
        var sides: [Socket] = []
        var monitorReaders: [Socket] = []
        let forwarder: BrokerForwarder
        let endpoints: (String, String)
        do throws(ZMQError) {
            let xsub = try context.socket(.xsub)
            sides.append(xsub)
            try xsub.set(.linger, .zero)
            try xsub.set(.receiveHighWaterMark, highWaterMark)
            // What the XSUB sends is subscriptions: to a publisher that (re)connects it replays
            // every one it holds at once, and libzmq drops those beyond the send mark without
            // a word, so a publisher would filter away subscribers it never heard of. Unbounded:
            // they are bounded by the subscriptions the backend accepted.
            try xsub.set(.sendHighWaterMark, 0)
            // No publisher can make the broker hold a frame of any size (NBP-1 §6).
            try xsub.set(.maximumMessageSize, configuration.maximumFrameSize)
            // TCP keepalive, never ZMTP heartbeats: see ConnectionKeepalive for the abort they cause.
            try ConnectionKeepalive.apply(to: xsub, interval: heartbeat, timeout: heartbeat * 3)
            if let security, let authentication {
                try authentication.guardSocket(
                    xsub, as: .publishers, keyPair: security.keyPair, alsoMonitoring: ConnectionTracker.events)
            }
            try xsub.bind(frontend)
            if configuration.retainedNames > 0 {
                // Keeping retained values (NBP-1 §18): a retained post no subscriber wants yet must
                // still reach the broker, so the frontend subscribes to every name. The XSUB keeps
                // it and sends it to every publisher that connects; subscribers' own "" come and
                // go on top of it (libzmq counts each topic's subscribers).
                try xsub.send([1], mode: .dontWait)
            }
            // The endpoint as bound (a `*` port resolved), read before connecting upstream, when the
            // last endpoint is still the bound one; reading it fails only on a closed socket, and
            // then the endpoint as given is the best name there is.
            let boundFrontend = (try? xsub.lastEndpoint()) ?? frontend
            for endpoint in upstream { try xsub.connect(endpoint) }
            let xpub = try context.socket(.xpub)
            sides.append(xpub)
            try xpub.set(.linger, .zero)
            // The per-subscriber mark from the budget in bytes, set once (SubscriberQueueBudget
            // says why it never changes on the running socket).
            try xpub.set(.sendHighWaterMark, SubscriberQueueBudget.mark(budget: configuration.subscriberBudget, fixedMark: highWaterMark))
            try xpub.set(.receiveHighWaterMark, highWaterMark)
            // What arrives on the backend is subscription messages. libzmq's subscription trie
            // recurses once per byte when a subscription is removed, so one of some hundred
            // kilobytes overflows the proxy thread's stack when its subscriber leaves: a peer
            // that sends a larger one is disconnected before it is read.
            try xpub.set(.maximumMessageSize, Int64(configuration.maximumSubscriptionSize))
            try ConnectionKeepalive.apply(to: xpub, interval: heartbeat, timeout: heartbeat * 3)
            if let security, let authentication {
                try authentication.guardSocket(
                    xpub, as: .subscribers, keyPair: security.keyPair, alsoMonitoring: ConnectionTracker.events)
            } else if admission != nil {
                // Not enforced: should the gate be missing, handshakes go through unpaced.
                try xpub.set(.zapDomain, SubscriberAdmissionGate.domain)
            }
            try xpub.bind(backend)
            endpoints = (boundFrontend, (try? xpub.lastEndpoint()) ?? backend)  // as for the frontend
            connections.setListening([endpoints.0, endpoints.1])
            if security == nil {
                // Without CURVE nobody monitors the sides yet: the forwarder reads their
                // connection events itself (the reader connects first: libzmq blocks on a
                // monitor without one, so it also has no receive limit).
                for side in [xsub, xpub] {
                    monitorReaders.append(try context.monitorReader(for: side, events: ConnectionTracker.events))
                }
            }
            forwarder = try BrokerForwarder(
                frontend: xsub, backend: xpub, shared: shared, configuration: configuration,
                retained: retained, retainedLog: retainedLog,
                boundEndpoints: [(xsub, endpoints.0), (xpub, endpoints.1)], monitorReaders: monitorReaders,
                connections: connections, pacedHandshakes: admission != nil, onEvent: onEvent)
        } catch {
            Self.close(sides: sides, monitorReaders: monitorReaders, authentication: authentication, admission: admission)
            throw .transport(error)  // the context ends with its last reference, here
        }

        // The thread holds the context, the sockets, the shared state and the handler, never
        // `self`: a broker that is dropped stops it (deinit asks) and the thread lets go of the
        // rest when it ends.
        let handoff = ThreadHandoff(value: (forwarder, sides, monitorReaders))
        let drainNanoseconds = Timestamps.boundedNanoseconds(configuration.drainTimeout)
        let proxyThread: pthread_t
        do {
            proxyThread = try spawnThread(named: "nbus-proxy") { [context] in
                let (forwarder, sides, monitorReaders) = handoff.value
                forwarder.run()
                Self.close(sides: sides, monitorReaders: monitorReaders, authentication: authentication, admission: admission)
                // The context ends once its sockets closed; with a drain, only once the backend
                // handed its queues to the subscribers or its linger (what is left of the drain
                // time) passed: how long that took says which.
                let closing = Timestamps.monotonicNanoseconds()
                context.terminate()
                let drained = Timestamps.monotonicNanoseconds() &- closing
                if drainNanoseconds > 0 {
                    let linger = shared.drainLinger.load(ordering: .relaxed)
                    shared.statistics.withLock { statistics in
                        statistics.stopDrain = .nanoseconds(Int64(clamping: drained))
                        // A close that took its whole linger ended on it, with something still
                        // queued (libzmq returns as soon as the queues are empty).
                        statistics.stopDrainTimedOut = statistics.undeliveredAtStop > 0 || drained >= linger
                    }
                }
                shared.markStopped()
            }
        } catch {
            Self.close(sides: sides, monitorReaders: monitorReaders, authentication: authentication, admission: admission)
            throw error
        }
        frontendEndpoint = endpoints.0
        backendEndpoint = endpoints.1
        thread = Mutex(proxyThread)
    }

    /// A broker on `frontend` and `backend` with every other setting at its default.
    public convenience init(frontend: String, backend: String) throws(BusError) {
        try self.init(BrokerConfiguration(frontend: frontend, backend: backend))
    }

    /// The open connections, oldest first: side, peer, CURVE key, since when (from the sides'
    /// monitors; see `BrokerConnection`).
    public func openConnections() -> [BrokerConnection] {
        tracker.snapshot()
    }

    /// Each open subscriber connection, oldest first, with the bytes written to it that its peer
    /// has not taken yet: the kernel's socket buffer (over TCP unsent and unacknowledged, over ipc
    /// unread). What libzmq still queues for it, behind that, cannot be read from outside libzmq;
    /// a subscriber that keeps up holds next to nothing here, one that falls behind holds the
    /// buffer's whole size. Read now, from the caller's thread (an ioctl on each descriptor); a
    /// connection that closed meanwhile is left out.
    public func subscriberBacklogs() -> [(connection: BrokerConnection, unsentBytes: Int)] {
        tracker.snapshot().filter { $0.side == .subscriber }.compactMap { connection in
            ConnectionDescriptor(connection.fileDescriptor).unsentBytes().map { (connection, $0) }
        }
    }

    /// The retained values this broker keeps now (NBP-1 §18): how many names and bytes, and the
    /// first `limit` names in name order with each value's size and expiry. The forwarding thread
    /// owns the values and lists them at the start of its next round (within
    /// `forwardingHeartbeat`, sooner when woken); values whose `retain-for` passed are dropped
    /// then, never listed. Empty once the broker has stopped, and when it keeps none
    /// (`BrokerConfiguration.retainedNames` 0).
    public func retainedValues(limit: Int = 1_000) async -> BrokerRetainedValues {
        await shared.requestRetainedListing(limit: limit)
    }

    /// The subscriptions the subscribers hold, as they sent them.
    public func subscriptions() -> BrokerSubscriptions {
        shared.subscriptions.snapshot()
    }

    /// How long ago the forwarding loop last began a round, or nil once it has stopped. A running
    /// loop begins one at least every `forwardingHeartbeat`, busy or idle: an age of several
    /// seconds means the thread is stuck.
    public func forwardingLoopAge() -> Duration? {
        guard !shared.control.withLock({ $0.stopped }) else { return nil }
        let last = shared.lastRound.load(ordering: .relaxed)
        let now = Timestamps.monotonicNanoseconds()
        return .nanoseconds(Int64(clamping: now > last ? now - last : 0))
    }

    /// The longest the forwarding loop waits between rounds when it is well (1 s).
    public static let forwardingHeartbeat: Duration = .milliseconds(BrokerForwarder.heartbeatInterval)

    /// Raises this process's soft limit on open files to its hard limit and returns the limit
    /// now in force (nil when it cannot be read). Every connection to a broker takes a file
    /// descriptor, and libzmq 4.3, refused one by `EMFILE`, retries the accept at once for as long
    /// as the limit holds: the broker spins at 100% CPU and shuts out every new client. Many
    /// systems start processes with a soft limit of 1,024 under a hard limit hundreds of times
    /// higher.
    public static func raiseOpenFileLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// Closes what `init` opened, on whichever thread owns it now (the caller's when opening
    /// failed, the forwarding thread's when it ends).
    private static func close(
        sides: [Socket], monitorReaders: [Socket], authentication: ZAPHandler?, admission: SubscriberAdmissionGate?
    ) {
        // Monitors stop before their reader does, and the sides close before the handler:
        // libzmq would block on a reader-less monitor, and admit anyone without a handler.
        for side in sides {
            side.stopMonitoring()
            side.close()
        }
        for reader in monitorReaders { reader.close() }
        authentication?.stop()
        admission?.stop()
    }

    deinit {
        shared.requestStop()
        if let thread = thread.withLock({ $0 }) { pthread_detach(thread) }
    }

    /// Counters now (as of the forwarding thread's last round of work).
    public func statistics() async -> BrokerStatistics {
        snapshot()
    }

    /// Stops forwarding, closes the sockets and joins the thread; returns the final counters.
    @discardableResult
    public func stop() async -> BrokerStatistics {
        shared.requestStop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.control.withLock { state -> Bool in
                if state.stopped { return true }
                state.stopWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        if let thread = thread.withLock({ thread in defer { thread = nil }; return thread }) {
            pthread_join(thread, nil)
        }
        return snapshot()
    }

    /// The forwarder's last counters with the authentication counters now.
    private func snapshot() -> BrokerStatistics {
        var stats = shared.statistics.withLock { $0 }
        stats.connections = tracker.open.load(ordering: .relaxed)
        stats.peakConnections = tracker.peak.load(ordering: .relaxed)
        stats.acceptFailures = tracker.acceptFailures.load(ordering: .relaxed)
        if let counts = admission?.counts {
            stats.subscriberHandshakesHeld = counts.held
            stats.subscriberHandshakesAbandoned = counts.abandoned
        }
        if let counts = authentication?.counts {
            stats.publisherAuthentication = counts[.publishers] ?? AuthenticationCounts()
            stats.subscriberAuthentication = counts[.subscribers] ?? AuthenticationCounts()
        }
        return stats
    }
}
