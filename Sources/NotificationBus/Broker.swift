#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import ZeroMQ

/// Message and byte counters of a running broker, as libzmq's proxy reports them.
public struct BrokerStatistics: Hashable, Sendable {
    /// Messages received from publishers (frontend, XSUB).
    public var fromPublishers: UInt64 = 0
    /// Bytes received from publishers.
    public var bytesFromPublishers: UInt64 = 0
    /// Messages sent to subscribers (backend, XPUB); per message, not per subscriber.
    public var toSubscribers: UInt64 = 0
    /// Bytes sent to subscribers.
    public var bytesToSubscribers: UInt64 = 0
    /// Subscription messages received from subscribers (backend).
    public var subscriptionMessages: UInt64 = 0
    /// With CURVE: what the frontend did with publishers' handshakes (all zero without CURVE).
    public var publisherAuthentication = AuthenticationCounts()
    /// With CURVE: what the backend did with subscribers' handshakes (all zero without CURVE).
    public var subscriberAuthentication = AuthenticationCounts()

    /// Zero counters.
    public init() {}
}

/// `nbus broker`: libzmq's own XSUB/XPUB proxy between many publishers (frontend) and many
/// subscribers (backend). Frames pass through untouched; subscriptions flow upstream.
///
/// Two threads: the proxy thread owns the frontend, backend and one end of an inproc control
/// pair; the control thread owns the other end and asks for statistics or termination. With
/// `BrokerSecurity`, both sides are CURVE servers and a third thread, the ZAP handler, admits only
/// the allow-listed keys; it starts before the sides bind and stops after they close.
public final class Broker: Sendable {
    /// The frontend endpoint, resolved (real port for `tcp://...:*`).
    public let frontendEndpoint: String
    /// The backend endpoint, resolved.
    public let backendEndpoint: String
    private let context: Context
    private let wake: WakeSignal
    private let control: Mutex<ControlState>
    private let statsSnapshot = Mutex(BrokerStatistics())
    private let threads: Mutex<[pthread_t]>
    private let authentication: ZAPHandler?

    private struct ControlState {
        var stopRequested = false
        var statisticsWaiters: [CheckedContinuation<BrokerStatistics, Never>] = []
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Binds `frontend` (for publishers) and `backend` (for subscribers) and starts forwarding.
    ///
    /// `upstream`: other brokers' backends this broker's frontend socket also connects to (a
    /// chain): their notifications arrive as if from a local publisher, and this broker's
    /// subscriptions travel up to them, so filtering still happens at the first publisher. Chains
    /// must not form a cycle (a notification would circle for ever).
    ///
    /// `highWaterMark`: messages queued per publisher (frontend) and per subscriber (backend)
    /// before the broker drops (libzmq's XPUB drops silently at the mark; subscribers see the
    /// drops as upstream gaps). The default matches a bus's own marks, so a burst a publisher may
    /// queue also fits at the broker.
    ///
    /// `heartbeatMilliseconds`: ZMTP heartbeats on every connection (0: off); a peer silent for
    /// three intervals after a PING is dropped, so a frozen subscriber's or publisher's
    /// subscriptions and queue do not stay for ever (and it reconnects when it comes back).
    ///
    /// `maximumSubscriptionSize`: the largest subscription message a subscriber may send (bytes);
    /// `maximumFrameSize`: the largest frame a publisher may send. A peer that sends more is
    /// disconnected by libzmq before the message is read (it may reconnect); the defaults are
    /// far above what NBP/1 peers send (NBP-1 §6).
    ///
    /// With `security`, both sides are CURVE servers that admit only the allow-listed keys
    /// (plaintext peers included, everyone else is refused and counted); `onAuthentication` is
    /// called on the ZAP handler's thread for admissions and refusals, rate-limited per key. It does
    /// not combine with `upstream` yet (`BusError.security`): the frontend socket would have to be
    /// a CURVE server for its publishers and a CURVE client of the upstream broker at once.
    public init(
        frontend: String, backend: String, upstream: [String] = [], highWaterMark: Int32 = 10_000,
        heartbeatMilliseconds: Int32 = 5_000, maximumSubscriptionSize: Int = NBP1.maximumSubscriptionLength,
        maximumFrameSize: Int64 = NBP1.transportFrameLimit(),
        security: BrokerSecurity? = nil, onAuthentication: (@Sendable (AuthenticationEvent) -> Void)? = nil
    ) throws(BusError) {
        guard maximumSubscriptionSize >= 1 else {
            throw .invalidConfiguration("maximumSubscriptionSize must be at least 1 byte, not \(maximumSubscriptionSize)")
        }
        guard maximumFrameSize >= 1 else {
            throw .invalidConfiguration("maximumFrameSize must be at least 1 byte, not \(maximumFrameSize)")
        }
        if security != nil && !upstream.isEmpty {
            throw .security(
                "a CURVE broker cannot chain to an upstream broker yet: its frontend would be a CURVE server "
                    + "and a CURVE client at once")
        }
        let context: Context
        let wake: WakeSignal
        do {
            context = try Context(ioThreads: 1)
            wake = try WakeSignal()
        } catch {
            throw .transport(error)
        }
        self.context = context
        self.wake = wake
        self.control = Mutex(ControlState())
        // Bound before the CURVE sockets bind, so no handshake ever finds no handler.
        let authentication = try security.map { security throws(BusError) in
            try ZAPHandler(
                context: context,
                allowLists: [.publishers: security.allowedPublishers, .subscribers: security.allowedSubscribers],
                onEvent: onAuthentication)
        }
        self.authentication = authentication
        let controlEndpoint = "inproc://nbus-broker-control-\(UInt64.random(in: 1...UInt64.max))"
        let started = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<(String, String), BusError>?>(nil)

        let proxyThread = try spawnThread(named: "nbus-proxy") { [context] in
            var sides: [Socket] = []
            defer {
                // Monitors stop before their reader does, and the sides close before the handler:
                // libzmq would block on a reader-less monitor, and admit anyone without a handler.
                for side in sides {
                    side.stopMonitoring()
                    side.close()
                }
                authentication?.stop()
            }
            do throws(ZMQError) {
                let xsub = try context.socket(.xsub)
                sides.append(xsub)
                try xsub.set(.linger, 0)
                try xsub.set(.receiveHighWaterMark, highWaterMark)
                // What the XSUB sends is subscriptions: to a publisher that (re)connects it replays
                // every one it holds at once, and libzmq drops those beyond the send mark without
                // a word, so a publisher would filter away subscribers it never heard of. Unbounded:
                // they are bounded by the subscriptions the backend accepted.
                try xsub.set(.sendHighWaterMark, 0)
                // No publisher can make the broker hold a frame of any size (NBP-1 §6).
                try xsub.set(.maximumMessageSize, maximumFrameSize)
                try Self.setHeartbeats(xsub, heartbeatMilliseconds)
                if let security, let authentication {
                    try authentication.guardSocket(xsub, as: .publishers, keyPair: security.keyPair)
                }
                try xsub.bind(frontend)
                // Before connecting upstream: the last endpoint is then the bound one.
                let boundFrontend = (try? xsub.lastEndpoint()) ?? frontend
                for endpoint in upstream { try xsub.connect(endpoint) }
                let xpub = try context.socket(.xpub)
                sides.append(xpub)
                try xpub.set(.linger, 0)
                try xpub.set(.sendHighWaterMark, highWaterMark)
                try xpub.set(.receiveHighWaterMark, highWaterMark)
                // What arrives on the backend is subscription messages. libzmq's subscription trie
                // recurses once per byte when a subscription is removed, so one of some hundred
                // kilobytes overflows the proxy thread's stack when its subscriber leaves: a peer
                // that sends a larger one is disconnected before it is read.
                try xpub.set(.maximumMessageSize, Int64(maximumSubscriptionSize))
                try Self.setHeartbeats(xpub, heartbeatMilliseconds)
                if let security, let authentication {
                    try authentication.guardSocket(xpub, as: .subscribers, keyPair: security.keyPair)
                }
                try xpub.bind(backend)
                let controlSocket = try context.socket(.pair)
                try controlSocket.bind(controlEndpoint)
                let endpoints = (boundFrontend, (try? xpub.lastEndpoint()) ?? backend)
                outcome.withLock { $0 = .success(endpoints) }
                started.signal()
                try? Proxy.run(frontend: xsub, backend: xpub, control: controlSocket)
            } catch {
                outcome.withLock { $0 = .failure(.transport(error)) }
                started.signal()
            }
        }
        started.wait()
        guard case .success(let endpoints)? = outcome.withLock({ $0 }) else {
            pthread_join(proxyThread, nil)
            if case .failure(let error)? = outcome.withLock({ $0 }) { throw error }
            throw .system("the broker did not start")
        }
        frontendEndpoint = endpoints.0
        backendEndpoint = endpoints.1
        threads = Mutex([proxyThread])
        let controlThread = try spawnThread(named: "nbus-control") { [self] in runControl(endpoint: controlEndpoint) }
        threads.withLock { $0.append(controlThread) }
    }

    private static func setHeartbeats(_ socket: Socket, _ interval: Int32) throws(ZMQError) {
        guard interval > 0 else { return }
        let timeout = Int32(clamping: Int(interval) * 3)
        try socket.set(.heartbeatInterval, interval)
        try socket.set(.heartbeatTimeout, timeout)
        try socket.set(.heartbeatTTL, max(100, timeout))
    }

    deinit {
        requestStop()
        for thread in threads.withLock({ $0 }) { pthread_detach(thread) }
    }

    /// Counters now: asks the proxy (`STATISTICS`) through the control thread.
    public func statistics() async -> BrokerStatistics {
        await withCheckedContinuation { continuation in
            let stoppedAlready = control.withLock { state -> Bool in
                if state.stopped { return true }
                state.statisticsWaiters.append(continuation)
                return false
            }
            if stoppedAlready { continuation.resume(returning: snapshot()) }
            else { wake.signal() }
        }
    }

    /// Stops forwarding, closes the sockets and joins both threads; returns the final counters.
    @discardableResult
    public func stop() async -> BrokerStatistics {
        requestStop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = control.withLock { state -> Bool in
                if state.stopped { return true }
                state.stopWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        for thread in threads.withLock({ threads in defer { threads.removeAll() }; return threads }) {
            pthread_join(thread, nil)
        }
        return snapshot()
    }

    /// The last proxy counters with the authentication counters now.
    private func snapshot() -> BrokerStatistics {
        var stats = statsSnapshot.withLock { $0 }
        if let counts = authentication?.counts {
            stats.publisherAuthentication = counts[.publishers] ?? AuthenticationCounts()
            stats.subscriberAuthentication = counts[.subscribers] ?? AuthenticationCounts()
        }
        return stats
    }

    private func requestStop() {
        control.withLock { $0.stopRequested = true }
        wake.signal()
    }

    /// The control thread: serves statistics requests and the stop request, then terminates the proxy.
    private func runControl(endpoint: String) {
        guard let socket = try? context.socket(.pair), (try? socket.connect(endpoint)) != nil else { return }
        try? socket.set(.receiveTimeout, 2_000)
        try? socket.set(.linger, 0)
        while true {
            var poller = Poller()
            poller.register(fileDescriptor: wake.fileDescriptor)
            _ = try? poller.poll(timeoutMilliseconds: -1)
            wake.drain()
            let (stop, waiters) = control.withLock { state in
                defer { state.statisticsWaiters.removeAll() }
                return (state.stopRequested, state.statisticsWaiters)
            }
            if !waiters.isEmpty || stop { refreshStatistics(socket) }
            let snapshot = snapshot()
            for waiter in waiters { waiter.resume(returning: snapshot) }
            if stop { break }
        }
        try? socket.send(Proxy.Command.terminate.rawValue)
        socket.close()
        // The proxy thread closes its sockets when its stack unwinds; then the context can go.
        let stopWaiters = control.withLock { state in
            state.stopped = true
            defer { state.stopWaiters.removeAll() }
            return state.stopWaiters
        }
        let lateStatistics = control.withLock { state in
            defer { state.statisticsWaiters.removeAll() }
            return state.statisticsWaiters
        }
        let snapshot = snapshot()
        for waiter in lateStatistics { waiter.resume(returning: snapshot) }
        for waiter in stopWaiters { waiter.resume() }
    }

    private func refreshStatistics(_ socket: Socket) {
        guard (try? socket.send(Proxy.Command.statistics.rawValue)) != nil,
            let parts = try? socket.receiveMultipart(), parts.count == 8
        else { return }
        let values = parts.map { part -> UInt64 in
            part.count == 8 ? part.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } : 0
        }
        var stats = BrokerStatistics()
        stats.fromPublishers = values[0]
        stats.bytesFromPublishers = values[1]
        stats.toSubscribers = values[6]
        stats.bytesToSubscribers = values[7]
        stats.subscriptionMessages = values[4]
        statsSnapshot.withLock { $0 = stats }
    }
}
