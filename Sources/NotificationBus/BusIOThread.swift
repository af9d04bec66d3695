#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ZeroMQ

/// Who is subscribed at this publisher, as seen by its XPUB socket.
struct PublisherView {
    /// Plain ZeroMQ prefixes (from any subscriber, NotificationBus or foreign). XPUB passes the
    /// first subscribe and the last unsubscribe of a prefix, so this is a set.
    var prefixes: Set<[UInt8]> = []
    /// The data prefixes of this bus's own subscriptions when it delivers to itself without ZeroMQ
    /// (loopback: its XPUB never sees them), with how many subscriptions use each.
    var localPrefixes: [[UInt8]: Int] = [:]
    /// NotificationBus subscribers by bus id, with the patterns they announced.
    var presence: [UInt64: [NamePattern: Int]] = [:]
    /// Subscribers (bus ids) that acknowledged this publisher's end of stream.
    var endOfStreamAcknowledged: Set<UInt64> = []
    /// This publisher's id, to pick out acknowledgements addressed to it.
    let publisherID: UInt64

    /// Distinct subscribers that will receive `name`: announced buses whose pattern matches, or,
    /// when none announced, 1 if a plain prefix covers it (a foreign subscriber, count unknown).
    /// A prefix an announced pattern subscribes is that bus's, not a foreign subscriber's:
    /// `orders.*.eu` subscribes `orders.`, which covers `orders.shipped` although the pattern does
    /// not match it, and counting it would start a publisher before its real subscriber arrived.
    ///
    /// A presence is a claim any peer can make (a plain SUB can subscribe to presence topics), so
    /// it counts only while a data prefix that covers `name` is subscribed too: announcements
    /// without one never make a publisher send into nothing. Fake announcements beside a real
    /// subscriber can still inflate the count; with CURVE only admitted keys can make them.
    func subscriberCount(matching name: NotificationName) -> Int {
        let frameStart = Array(name.rawValue.utf8) + [0]
        guard prefixes.contains(where: { frameStart.starts(with: $0) })
            || localPrefixes.keys.contains(where: { frameStart.starts(with: $0) })
        else { return 0 }
        let announced = presence.values.filter { patterns in patterns.keys.contains { $0.matches(name) } }.count
        if announced > 0 { return announced }
        let announcedPrefixes = Set(presence.values.flatMap { $0.keys.map(\.subscriptionPrefix) })
        return prefixes.contains { !announcedPrefixes.contains($0) && frameStart.starts(with: $0) } ? 1 : 0
    }

    /// A loopback subscription's data prefix came (`subscribe`) or went.
    mutating func applyLocal(subscribe: Bool, prefix: [UInt8]) {
        let count = (localPrefixes[prefix] ?? 0) + (subscribe ? 1 : -1)
        localPrefixes[prefix] = count > 0 ? count : nil
    }

    mutating func apply(subscribe: Bool, topic: ArraySlice<UInt8>) {
        if topic.starts(with: ControlNames.endOfStreamAcknowledgementPrefix) {
            let rest = topic.dropFirst(ControlNames.endOfStreamAcknowledgementPrefix.count)
            guard subscribe, rest.count == 33, rest.prefix(16).elementsEqual(ControlNames.hex(publisherID).utf8),
                let subscriber = UInt64(String(decoding: rest.suffix(16), as: UTF8.self), radix: 16)
            else { return }
            endOfStreamAcknowledged.insert(subscriber)
            return
        }
        if topic.starts(with: ControlNames.presencePrefix) {
            let rest = topic.dropFirst(ControlNames.presencePrefix.count)
            guard rest.count > 17, rest[rest.startIndex + 16] == UInt8(ascii: "."),
                let bus = UInt64(String(decoding: rest.prefix(16), as: UTF8.self), radix: 16),
                let pattern = try? NamePattern(String(decoding: rest.dropFirst(17), as: UTF8.self))
            else { return }
            if subscribe {
                presence[bus, default: [:]][pattern, default: 0] += 1
            } else if var patterns = presence[bus] {
                let left = (patterns[pattern] ?? 1) - 1
                patterns[pattern] = left > 0 ? left : nil
                presence[bus] = patterns.isEmpty ? nil : patterns
            }
            return
        }
        if subscribe { prefixes.insert(Array(topic)) } else { prefixes.remove(Array(topic)) }
    }
}

/// The one thread that owns every socket of a `Bus`: it runs commands from the mailbox, sends
/// queued posts, reads the subscriber socket in batches and hands them to subscriptions.
final class BusIOThread {
    private let core: BusCore
    private let configuration: BusConfiguration
    /// Runs the jobs of tasks that prefer this bus's executor.
    private let executor: BusExecutor
    private let context: Context
    private var publisher: Socket?
    private var subscriber: Socket?
    private(set) var resolvedEndpoints: [String] = []
    /// CURVE client: readers of the sockets' monitors (handshake failures), owned by this thread.
    private var handshakeMonitors: [Socket] = []
    /// Busy rounds until the handshake monitors are read again: failures repeat at every
    /// reconnect, so a look every 64th round (and after every sleep) is prompt enough, and spares
    /// a busy loop a receive call per round on every connecting bus.
    private var roundsUntilHandshakeCheck = 0
    /// The ipc and tcp endpoints this bus listens on (resolved), for `checkMemory`.
    private var boundEndpoints: [(socket: Socket, endpoint: String)] = []
    /// When resident memory is looked at next, and no second drop before `memoryCooldownUntil`.
    private var nextMemoryCheck: UInt64 = 0
    private var memoryCooldownUntil: UInt64 = 0
    /// CURVE server: the thread answering ZAP requests for this bus's context.
    private var authentication: ZAPHandler?

    // Subscriber side.
    private var receiver: BusReceiver
    private var prefixRefCounts: [[UInt8]: Int] = [:]
    private var presenceRefCounts: [NamePattern: Int] = [:]
    private var readingPaused = false
    /// The subscriber is connected to this bus's own inproc publisher endpoint: posts are routed
    /// to local subscriptions directly (no encode-send-receive round through libzmq), and the
    /// SUB socket is not connected there, so nothing arrives twice.
    private var loopback = false
    /// With `loopback`: messages of `pending` already routed locally (sent ones are a prefix).
    private var loopbackRouted = 0

    // Publisher side.
    private var view: PublisherView
    /// Posts taken from the mailbox; the batch's unsent ones are not yet accepted by ZeroMQ.
    private var pending = MessageBatch(capacity: 1024)
    private var controlSequence: UInt64 = 0
    /// XPUB prefix changes not yet handed to posting threads.
    private var changedPrefixes: [([UInt8], Bool)] = []

    private var waiters: [BusWaiter] = []
    private var stats = BusStats()
    private var closing = false

    private static let batchLimit = 1024

    /// Creates the sockets and attaches them; runs on the I/O thread itself.
    init(core: BusCore, configuration: BusConfiguration, executor: BusExecutor) throws(BusError) {
        self.executor = executor
        self.core = core
        self.configuration = configuration
        self.view = PublisherView(publisherID: configuration.publisherID)
        self.receiver = BusReceiver(
            maximumPayload: configuration.maximumPayload, maximumHeaderCount: configuration.maximumHeaderCount,
            maximumTrackedStreams: configuration.maximumTrackedStreams)
        do {
            // Blocky: close() sets the publisher's linger so queued frames (and the end-of-stream
            // record) still reach subscribers; every socket starts with linger 0 so nothing else waits.
            context = try Context(ioThreads: 1, blocky: true)
        } catch {
            throw .transport(error)
        }
        do {
            try openSockets()
        } catch {
            closeSockets()
            throw error
        }
    }

    /// Starts the ZAP handler (CURVE server), then creates, secures and attaches each socket.
    private func openSockets() throws(BusError) {
        if let server = configuration.curveServer,
            (configuration.publish + configuration.subscribe).contains(where: \.isBind)
        {
            // Bound before any CURVE socket binds, so no handshake ever finds no handler.
            let allowed = server.allowedClients
            authentication = try ZAPHandler(
                context: context, allowLists: [.subscribers: allowed, .publishers: allowed],
                onEvent: server.onAuthentication)
        }
        let configuration = self.configuration
        if !configuration.publish.isEmpty {
            let socket = try transport { () throws(ZMQError) in try context.socket(.xpub) }
            publisher = socket
            try transport { () throws(ZMQError) in
                try socket.set(.sendHighWaterMark, configuration.sendHighWaterMark)
                // What arrives on an XPUB is subscription messages: bound their size (a huge one
                // overflows libzmq's recursive trie when removed) by disconnecting the sender.
                // A little slack over the broker's own limit: a subscription it forwards may arrive
                // here as a ZMTP command a few bytes longer (a replay after a reconnection).
                try socket.set(.maximumMessageSize, Int64(WireFormat.maximumSubscriptionLength + 64))
                try socket.set(.xpubNoDrop, configuration.publisherBackpressure)
                try socket.set(.linger, 0)
                // A connected publisher (brokered) must forget a lost broker's subscriptions: with
                // the default, libzmq keeps the pipe across the outage, so the stale subscriptions
                // (and presence) stay and a restarted broker's replay of them is deduplicated away.
                // With IMMEDIATE the pipe ends with the connection (XPUB reports every topic as
                // unsubscribed) and a reconnection brings the new broker's subscriptions afresh.
                // Posts made while disconnected go nowhere; subscribers count them as gaps.
                try socket.set(.immediate, true)
                try setHeartbeats(socket, configuration)
            }
            try secure(socket, configuration.publish, clients: .subscribers)
            for attachment in configuration.publish { try transport { () throws(ZMQError) in try attach(socket, attachment) } }
        }
        if !configuration.subscribe.isEmpty {
            let socket = try transport { () throws(ZMQError) in try context.socket(.sub) }
            subscriber = socket
            try transport { () throws(ZMQError) in
                try socket.set(.receiveHighWaterMark, configuration.receiveHighWaterMark)
                // A SUB sends its subscriptions through its send pipe, and libzmq drops them at the
                // send mark (1,000 by default) without a word: a subscriber of many patterns, or
                // one reconnecting to a broker, would silently lose subscriptions. Unbounded here:
                // there are only as many as this bus's patterns (twice, with presence).
                try socket.set(.sendHighWaterMark, 0)
                // A peer cannot make this process hold a frame of any size (NBP-1 §6).
                // Twice the largest frame for the larger of this bus's maximum payload and NBP/1's
                // default: a publisher on the default may send a payload this bus refuses, and
                // that must cost one counted rejection (payloadTooLarge), not the connection.
                let payloadBound = max(configuration.maximumPayload, WireFormat.defaultMaximumPayload)
                try socket.set(.maximumMessageSize, WireFormat.transportFrameLimit(maximumPayload: payloadBound))
                try socket.set(.linger, 0)
                try setHeartbeats(socket, configuration)
                try socket.subscribe(ControlNames.endOfStreamPrefix)
            }
            try secure(socket, configuration.subscribe, clients: .publishers)
            let ownEndpoints = Set(configuration.publish.compactMap { attachment -> String? in
                guard case .bind(let endpoint) = attachment, endpoint.hasPrefix("inproc://") else { return nil }
                return endpoint
            })
            for attachment in configuration.subscribe {
                if case .connect(let endpoint) = attachment, ownEndpoints.contains(endpoint) {
                    loopback = true
                    resolvedEndpoints.append(endpoint)
                    continue
                }
                try transport { () throws(ZMQError) in try attach(socket, attachment) }
            }
        }
    }

    /// Runs socket calls, their `ZMQError` as `BusError.transport`.
    private func transport<Result>(_ body: () throws(ZMQError) -> Result) throws(BusError) -> Result {
        do { return try body() } catch { throw .transport(error) }
    }

    /// Applies `configuration.curve` (connecting sockets) or `curveServer` (binding ones) to
    /// `socket`, before it attaches. `clients` is who connects to it when it binds.
    private func secure(
        _ socket: Socket, _ attachments: [Attachment], clients: AuthenticationDomain
    ) throws(BusError) {
        guard configuration.curve != nil || configuration.curveServer != nil else {
            // A plaintext client of a CURVE server is dropped at every handshake and would never
            // know why: its monitor counts the mechanism mismatch (inproc has no handshake).
            let connectsOverNetwork = attachments.contains {
                if case .connect(let endpoint) = $0 { return !endpoint.hasPrefix("inproc://") }
                return false
            }
            if connectsOverNetwork { try transport { () throws(ZMQError) in try monitorHandshakes(of: socket) } }
            return
        }
        let binds = attachments.contains(where: \.isBind)
        let connects = attachments.contains { !$0.isBind }
        if binds && connects {
            throw .security(
                "a socket that both binds and connects cannot use CURVE (\(attachments.map(\.description).joined(separator: ", ")))")
        }
        if binds, let server = configuration.curveServer, let authentication {
            try transport { () throws(ZMQError) in
                try authentication.guardSocket(socket, as: clients, keyPair: server.keyPair)
            }
        } else if connects, let client = configuration.curve {
            try transport { () throws(ZMQError) in
                try socket.set(.curveServerKey, try Z85.decode(client.serverPublicKey))
                try socket.set(.curvePublicKey, try Z85.decode(client.keyPair.publicKey))
                try socket.set(.curveSecretKey, try Z85.decode(client.keyPair.secretKey))
                try monitorHandshakes(of: socket)
            }
        }
    }

    /// Counts `socket`'s failed handshakes in `stats` (`readHandshakeFailures`).
    private func monitorHandshakes(of socket: Socket) throws(ZMQError) {
        handshakeMonitors.append(try context.monitorReader(for: socket, events: .handshakeFailures))
    }

    /// Stops the monitors before their readers, closes every socket, then stops the ZAP handler.
    private func closeSockets() {
        publisher?.stopMonitoring()
        subscriber?.stopMonitoring()
        for reader in handshakeMonitors { reader.close() }
        handshakeMonitors.removeAll()
        publisher?.close()
        subscriber?.close()
        publisher = nil
        subscriber = nil
        authentication?.stop()
        authentication = nil
    }

    /// ZMTP heartbeats (`heartbeatIntervalMilliseconds`; 0 leaves them off): the peer is asked to
    /// drop this side after the same timeout, so a dead link is noticed at both ends.
    private func setHeartbeats(_ socket: Socket, _ configuration: BusConfiguration) throws(ZMQError) {
        guard configuration.heartbeatIntervalMilliseconds > 0 else { return }
        let timeout = max(configuration.heartbeatTimeoutMilliseconds, configuration.heartbeatIntervalMilliseconds)
        try socket.set(.heartbeatInterval, configuration.heartbeatIntervalMilliseconds)
        try socket.set(.heartbeatTimeout, timeout)
        try socket.set(.heartbeatTTL, max(100, timeout))
    }

    private func attach(_ socket: Socket, _ attachment: Attachment) throws(ZMQError) {
        switch attachment {
        case .bind(let endpoint):
            try socket.bind(endpoint)
            let resolved = try socket.lastEndpoint()
            resolvedEndpoints.append(resolved)
            if !resolved.hasPrefix("inproc://") { boundEndpoints.append((socket, resolved)) }
        case .connect(let endpoint):
            try socket.connect(endpoint)
            resolvedEndpoints.append(endpoint)
        }
    }

    // MARK: The loop

    func run() {
        core.markIOThread()
        var commands: [BusCommand] = []
        var jobs: [UnownedJob] = []
        let spinNanoseconds = UInt64(max(0, configuration.idleSpinMicroseconds)) * 1_000
        var lastWork = Timestamps.monotonicNanoseconds()
        while true {
            // Tasks running on the bus's executor first: what they post goes out in this round.
            var ranJobs = runJobs(&jobs)
            // Back-pressure: take more posts only once everything taken so far went to ZeroMQ, so a
            // refusing XPUB leaves them in the bounded mailbox, where `post` waits for room.
            let takeOutbound = pending.unsentCount == 0
            if takeOutbound {
                pending.removeAll()
                loopbackRouted = 0
            }
            let spaceWaiters = core.mailbox.withLock { box -> [SpaceWaiter] in
                box.sleeping = false
                swap(&box.commands, &commands)
                guard takeOutbound else { return [] }
                swap(&box.outbound, &pending)
                guard !box.spaceWaiters.isEmpty else { return [] }
                defer { box.spaceWaiters.removeAll() }
                return box.spaceWaiters
            }
            for waiter in spaceWaiters { waiter.resume() }
            var didWork = !commands.isEmpty || ranJobs
            for command in commands { handle(command) }
            commands.removeAll(keepingCapacity: true)
            if closing { break }
            didWork = sendPending() || didWork
            didWork = readSubscriptions() || didWork
            if !readingPaused { didWork = readNotifications() || didWork }
            // A consumer on the bus's executor that this round resumed runs now, not a round later.
            ranJobs = runJobs(&jobs)
            didWork = ranJobs || didWork
            if !handshakeMonitors.isEmpty {
                roundsUntilHandshakeCheck -= 1
                if roundsUntilHandshakeCheck <= 0 {
                    roundsUntilHandshakeCheck = 64
                    didWork = readHandshakeFailures() || didWork
                }
            }
            expireWaiters()
            checkMemory()
            if didWork {
                publishStats()
                if spinNanoseconds > 0 { lastWork = Timestamps.monotonicNanoseconds() }
                continue
            }
            if pending.unsentCount > 0 {
                waitForRoomToSend()
                continue
            }
            // Idle strategy: within `idleSpinMicroseconds` of the last work, yield the core and
            // look again instead of sleeping, so the next message needs no wake-up (latency).
            if spinNanoseconds > 0, Timestamps.monotonicNanoseconds() - lastWork < spinNanoseconds {
                sched_yield()
                continue
            }
            publishStats()
            let parked = core.mailbox.withLock { box -> Bool in
                if !box.commands.isEmpty || !box.outbound.isEmpty || !box.jobs.isEmpty { return false }
                box.sleeping = true
                return true
            }
            if parked { park() }
        }
        shutDown()
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

    /// The XPUB refused a frame (`publisherBackpressure` and a full subscriber). A publisher-only
    /// bus waits in a blocking send (`ZMQ_SNDTIMEO` 1 ms): libzmq reports an XPUB writable while
    /// the next send still fails, so polling would spin. A bus that also subscribes must keep
    /// reading, so it polls its other sockets for 1 ms instead.
    private func waitForRoomToSend() {
        guard let publisher else { return }
        if subscriber == nil {
            try? publisher.set(.sendTimeout, 1)
            send(pending: publisher, mode: .blocking)
            try? publisher.set(.sendTimeout, -1)
            return
        }
        var poller = Poller()
        poller.register(fileDescriptor: core.wake.fileDescriptor)
        if let subscriber, !readingPaused { poller.register(subscriber) }
        for reader in handshakeMonitors { poller.register(reader) }
        _ = try? poller.poll(timeoutMilliseconds: 1)
        core.wake.drain()
    }

    /// Past `maximumResidentMemory`, drops every connection of the bound endpoints by re-binding
    /// them (libzmq ends a listener's connections with it), then gives the memory back.
    private func checkMemory() {
        guard let limit = configuration.maximumResidentMemory, !boundEndpoints.isEmpty else { return }
        let now = Timestamps.monotonicNanoseconds()
        guard now >= nextMemoryCheck else { return }
        nextMemoryCheck = now &+ 100_000_000
        guard let resident = residentMemoryBytes(), resident > limit else { return }
        releaseFreeMemory()
        guard now >= memoryCooldownUntil, let after = residentMemoryBytes(), after > limit else { return }
        memoryCooldownUntil = now &+ 300_000_000
        stats.memoryLimitResets += 1
        for (socket, endpoint) in boundEndpoints {
            guard (try? socket.unbind(endpoint)) != nil else { continue }
            // The old listener closes later, on libzmq's I/O thread: retry the bind for up to 2 s.
            for _ in 0..<200 {
                if (try? socket.bind(endpoint)) != nil { break }
                usleep(10_000)
            }
        }
        publishStats()
    }

    private func park() {
        var poller = Poller()
        let wakeIndex = poller.register(fileDescriptor: core.wake.fileDescriptor)
        if let publisher { poller.register(publisher) }
        if let subscriber, !readingPaused { poller.register(subscriber) }
        for reader in handshakeMonitors { poller.register(reader) }
        var timeout = -1
        // A memory limit is looked at ten times a second: a message a peer never finishes grows
        // inside libzmq, where this loop sees no traffic.
        if configuration.maximumResidentMemory != nil && !boundEndpoints.isEmpty { timeout = 100 }
        if let deadline = waiters.map(\.deadline).min() {
            let now = Timestamps.monotonicNanoseconds()
            let untilDeadline = deadline > now ? Int((deadline - now) / 1_000_000) + 1 : 0
            timeout = timeout < 0 ? untilDeadline : min(timeout, untilDeadline)
        }
        _ = try? poller.poll(timeoutMilliseconds: timeout)
        // Only when it fired: woken by a socket, reading the eventfd would be one more syscall
        // between the wake-up and the message (a later signal makes the next poll return at once).
        if poller.ready(at: wakeIndex).contains(.readable) { core.wake.drain() }
        roundsUntilHandshakeCheck = 0
    }

    // MARK: Commands

    private func handle(_ command: BusCommand) {
        switch command {
        case .addSubscription(let storage):
            addSubscription(storage)
        case .removeSubscription(let id):
            removeSubscription(id)
        case .addWaiter(let waiter):
            addWaiter(waiter)
        case .cancelWaiter(let id):
            if let index = waiters.firstIndex(where: { $0.id == id }) {
                let waiter = waiters.remove(at: index)
                finishWaiter(waiter, .failure(.cancelled))
            }
        case .resumeReading:
            readingPaused = receiver.wantsProducerPaused
        case .close:
            closing = true
        }
    }

    private func addSubscription(_ storage: SubscriptionStorage) {
        guard let subscriber, !storage.isEnded else {
            // `Bus.subscribe` counted its prefix as wanted already; it never became a subscription.
            if loopback { core.changeInterest { $0.changeLocal(storage.pattern.subscriptionPrefix, subscribed: false) } }
            return
        }
        receiver.add(storage)
        let prefix = storage.pattern.subscriptionPrefix
        prefixRefCounts[prefix, default: 0] += 1
        if prefixRefCounts[prefix] == 1 { try? subscriber.subscribe(prefix) }
        // Presence goes after the data prefix on the same pipe, so a publisher that sees it
        // already has the data subscription.
        presenceRefCounts[storage.pattern, default: 0] += 1
        if presenceRefCounts[storage.pattern] == 1 {
            let topic = ControlNames.presenceTopic(bus: configuration.publisherID, pattern: storage.pattern)
            try? subscriber.subscribe(topic)
            if loopback {
                // The own publisher sees a local subscription at once, as its XPUB would.
                view.applyLocal(subscribe: true, prefix: prefix)
                view.apply(subscribe: true, topic: topic[...])
                checkSubscriberWaiters()
            }
        }
        stats.activeSubscriptions = receiver.subscriptionCount
    }

    private func removeSubscription(_ id: UInt64) {
        guard let subscriber, let storage = receiver.remove(id: id) else { return }
        let pattern = storage.pattern
        if loopback { core.changeInterest { $0.changeLocal(pattern.subscriptionPrefix, subscribed: false) } }
        presenceRefCounts[pattern, default: 1] -= 1
        if presenceRefCounts[pattern] == 0 {
            presenceRefCounts[pattern] = nil
            let topic = ControlNames.presenceTopic(bus: configuration.publisherID, pattern: pattern)
            try? subscriber.unsubscribe(topic)
            if loopback {
                view.applyLocal(subscribe: false, prefix: pattern.subscriptionPrefix)
                view.apply(subscribe: false, topic: topic[...])
                checkSubscriberWaiters()
            }
        }
        let prefix = pattern.subscriptionPrefix
        prefixRefCounts[prefix, default: 1] -= 1
        if prefixRefCounts[prefix] == 0 {
            prefixRefCounts[prefix] = nil
            try? subscriber.unsubscribe(prefix)
        }
        readingPaused = receiver.wantsProducerPaused
        stats.activeSubscriptions = receiver.subscriptionCount
    }

    // MARK: Waiters

    private func addWaiter(_ waiter: BusWaiter) {
        switch waiter.kind {
        case .ready(let token, let pattern):
            guard let subscriber else { return finishWaiter(waiter, .failure(.notASubscriber)) }
            // Subscriptions queued before this wait (one mailbox, in order) are routes now; one of
            // them must be able to receive names `pattern` matches (their prefixes agree).
            let prefix = pattern.subscriptionPrefix
            let covered = receiver.routes.contains { route in
                route.prefix.count <= prefix.count ? prefix.starts(with: route.prefix) : route.prefix.starts(with: prefix)
            }
            guard covered else {
                return finishWaiter(waiter, .failure(.notSubscribed(pattern)))
            }
            // Looped back, every local subscription is live at this bus's own publisher already.
            if loopback { return finishWaiter(waiter, .success(())) }
            waiters.append(waiter)
            // Ordered after every subscription already sent on this socket: when a publisher
            // echoes the token, it has all of them.
            try? subscriber.subscribe(Array(token.rawValue.utf8) + [0])
        case .subscribers:
            guard publisher != nil else { return finishWaiter(waiter, .failure(.notAPublisher)) }
            waiters.append(waiter)
            checkSubscriberWaiters()
        case .handshakeRefused:
            guard !handshakesCannotSucceed else { return finishWaiter(waiter, .success(())) }
            waiters.append(waiter)
        }
    }

    private func finishWaiter(_ waiter: BusWaiter, _ result: Result<Void, BusError>) {
        if case .ready(let token, _) = waiter.kind, let subscriber {
            try? subscriber.unsubscribe(Array(token.rawValue.utf8) + [0])
        }
        // Whoever awaited this may read `stats` next: let it see the state that resolved the wait.
        publishStats()
        waiter.continuation.resume(returning: result)
    }

    private func checkSubscriberWaiters() {
        var index = 0
        while index < waiters.count {
            if case .subscribers(let count, let name, let atMost) = waiters[index].kind {
                let current = view.subscriberCount(matching: name)
                if atMost ? current <= count : current >= count {
                    finishWaiter(waiters.remove(at: index), .success(()))
                    continue
                }
            }
            index += 1
        }
    }

    private func expireWaiters() {
        guard !waiters.isEmpty else { return }
        let now = Timestamps.monotonicNanoseconds()
        var index = 0
        while index < waiters.count {
            let waiter = waiters[index]
            if waiter.deadline <= now {
                waiters.remove(at: index)
                finishWaiter(waiter, .failure(.timedOut(what: waiter.what, milliseconds: waiter.timeoutMilliseconds)))
            } else {
                index += 1
            }
        }
    }

    // MARK: Publisher side

    /// Hands queued frames to ZeroMQ. Without back-pressure XPUB never refuses (it drops at the
    /// HWM, which subscribers see as gaps); with it, a refused frame waits for the next round.
    private func sendPending() -> Bool {
        guard let publisher else {
            stats.unsent += UInt64(pending.removeAll())
            return false
        }
        guard loopback else { return send(pending: publisher, mode: .dontWait) > 0 }
        var progressed = false
        while true {
            // Route the next run of posts to local subscriptions, unless a full one holds them back.
            if !readingPaused && loopbackRouted < pending.count {
                let end = min(pending.count, loopbackRouted + Self.batchLimit)
                for index in loopbackRouted..<end {
                    pending.withMessageBytes(at: index) { receiver.deliverLocally($0) }
                }
                loopbackRouted = end
                if receiver.flush() { readingPaused = true }
                progressed = true
            }
            // Then hand the routed ones to ZeroMQ, for subscribers elsewhere.
            if send(pending: publisher, mode: .dontWait) > 0 { progressed = true }
            if pending.sentCount < loopbackRouted || readingPaused || loopbackRouted == pending.count { break }
        }
        return progressed
    }

    /// Sends `pending` in order until ZeroMQ refuses one (it stays queued); returns how many went.
    @discardableResult
    private func send(pending publisher: Socket, mode: BlockingMode) -> Int {
        let start = pending.sentCount
        // Looped back, only what local subscriptions have had may go out.
        let limit = loopback ? loopbackRouted : pending.count
        var skipped = 0
        while pending.sentCount < limit {
            do {
                _ = try publisher.send(&pending, mode: mode, limit: limit)
                break  // everything sent, or refused (would block)
            } catch {
                // A frame ZeroMQ rejects outright cannot be retried; it is counted as unsent.
                pending.skipNext()
                skipped += 1
            }
        }
        let sent = pending.sentCount - start - skipped
        stats.sent += UInt64(sent)
        stats.unsent += UInt64(skipped)
        return sent + skipped
    }

    /// Reads subscription messages from the XPUB socket: the publisher's view of its subscribers,
    /// and readiness tokens to echo.
    private func readSubscriptions() -> Bool {
        guard let publisher else { return false }
        var changed = false
        var prefixesChanged = false
        while let frame = try? publisher.receive(mode: .dontWait) {
            changed = true
            guard let first = frame.first, first <= 1 else { continue }
            let topic = frame[1...]
            if first == 1, topic.starts(with: ControlNames.readyPrefix), topic.last == 0 {
                // Posting threads see every subscription that came before the token first.
                if prefixesChanged { publishInterest() }
                prefixesChanged = false
                echoReadyToken(topic.dropLast())
                continue
            }
            let before = view.prefixes.count
            view.apply(subscribe: first == 1, topic: topic)
            if view.prefixes.count != before { changedPrefixes.append((Array(topic), first == 1)) }
            prefixesChanged = !changedPrefixes.isEmpty
        }
        if prefixesChanged { publishInterest() }
        if changed { checkSubscriberWaiters() }
        return changed
    }

    /// Hands the XPUB's prefix changes to posting threads (`PublisherInterest`), in order.
    private func publishInterest() {
        let changes = changedPrefixes
        changedPrefixes.removeAll(keepingCapacity: true)
        core.changeInterest { interest in
            for (prefix, subscribed) in changes { interest.changeRemote(prefix, subscribed: subscribed) }
        }
    }

    private func echoReadyToken(_ nameBytes: ArraySlice<UInt8>) {
        guard let publisher, let name = try? NotificationName(String(decoding: nameBytes, as: UTF8.self)) else { return }
        controlSequence += 1
        let reply = Notification(
            name: name, sequence: controlSequence, publisherID: configuration.publisherID,
            timestamp: Timestamps.wallClockNanoseconds())
        if let frame = try? EnvelopeCodec.encode(reply) { try? publisher.send(frame, mode: .dontWait) }
    }

    // MARK: Subscriber side

    /// Reads up to `batchLimit` frames, then hands each subscription its batch under one lock.
    private func readNotifications() -> Bool {
        guard let subscriber else { return false }
        let count = receiver.read(from: subscriber, limit: Self.batchLimit)
        if receiver.flush() { readingPaused = true }
        for token in receiver.readyTokens { resolveReadyToken(token) }
        receiver.readyTokens.removeAll()
        for publisherID in receiver.endOfStreamAcknowledgements {
            // Acknowledge upstream: the publisher stays connected until every subscriber has
            // processed its end of stream. Subscribing and unsubscribing at once is enough for
            // the publisher's XPUB to see it.
            let topic = ControlNames.endOfStreamAcknowledgement(publisher: publisherID, subscriber: configuration.publisherID)
            try? subscriber.subscribe(topic)
            try? subscriber.unsubscribe(topic)
        }
        receiver.endOfStreamAcknowledgements.removeAll()
        return count > 0
    }

    private func resolveReadyToken(_ nameBytes: [UInt8]) {
        guard let index = waiters.firstIndex(where: { waiter in
            if case .ready(let token, _) = waiter.kind { return token.rawValue.utf8.elementsEqual(nameBytes) }
            return false
        }) else { return }
        finishWaiter(waiters.remove(at: index), .success(()))
    }

    /// Whether a server refused this bus's key, or met it with another security mechanism (a
    /// plaintext client of a CURVE server, or the reverse): retrying changes neither.
    private var handshakesCannotSucceed: Bool {
        stats.handshakesRefused > 0 || stats.lastHandshakeFailure == .mechanismMismatch
    }

    /// A connecting socket (CURVE or plaintext): counts the failed handshakes its monitor reported.
    private func readHandshakeFailures() -> Bool {
        var any = false
        for reader in handshakeMonitors {
            while let frames = try? reader.receiveMultipart(mode: .dontWait) {
                guard let failure = SocketEvent(frames: frames)?.handshakeFailure else { continue }
                any = true
                if case .refused = failure { stats.handshakesRefused += 1 } else { stats.handshakesFailed += 1 }
                stats.lastHandshakeFailure = failure
            }
        }
        if any && handshakesCannotSucceed {
            let refusedWaiters = waiters.filter { if case .handshakeRefused = $0.kind { return true } else { return false } }
            waiters.removeAll { if case .handshakeRefused = $0.kind { return true } else { return false } }
            for waiter in refusedWaiters { finishWaiter(waiter, .success(())) }
        }
        return any
    }

    private func publishStats() {
        let posted = core.mailbox.withLock { $0.posted }
        stats.posted = posted
        let received = receiver.counters
        stats.framesReceived = received.framesReceived
        stats.unmatched = received.unmatched
        stats.unknownControlMessages = received.unknownControlMessages
        stats.lostUpstream = received.lostUpstream
        stats.endOfStreamRecords = received.endOfStreamRecords
        stats.streamsForgotten = received.streamsForgotten
        stats.trackedStreams = receiver.trackedStreams
        stats.rejected = received.rejected
        if let authentication {
            stats.clientAuthentication = authentication.counts.values.reduce(AuthenticationCounts(), +)
        }
        let snapshot = stats
        core.statsSnapshot.withLock { $0 = snapshot }
    }

    // MARK: Shutdown

    /// Sends `pending` until it is empty or `deadline` passes, waiting in blocking sends when
    /// ZeroMQ refuses (back-pressure) rather than polling (see `waitForRoomToSend`).
    private func flushPending(until deadline: UInt64) {
        guard let publisher else { return }
        while pending.unsentCount > 0 && Timestamps.monotonicNanoseconds() < deadline {
            if loopback && readingPaused {
                // A full local subscription: wait (briefly) for its consumer, then look again.
                var poller = Poller()
                poller.register(fileDescriptor: core.wake.fileDescriptor)
                _ = try? poller.poll(timeoutMilliseconds: 1)
                core.wake.drain()
                readingPaused = receiver.wantsProducerPaused
                continue
            }
            if !sendPending() {
                try? publisher.set(.sendTimeout, Int32(clamping: remainingMilliseconds(until: deadline)))
                send(pending: publisher, mode: .blocking)
            }
        }
    }

    /// Sends the last sequence per name, then waits, until `deadline`, for every NotificationBus
    /// subscriber to acknowledge it, re-sending every 20 ms meanwhile. Re-sending, not
    /// `XPUB_NODROP`: libzmq still drops a message for a pipe that was full a moment ago. Staying
    /// connected matters too: libzmq discards what is queued at a subscriber when its publisher
    /// disconnects. Receivers treat repeats as no-ops.
    private func sendEndOfStream(sequences: [NotificationName: UInt64], deadline: UInt64) {
        guard let publisher, !sequences.isEmpty,
            let name = try? NotificationName("_nbus.eos.\(ControlNames.hex(configuration.publisherID))")
        else { return }
        let payloads = EndOfStream.payloads(for: sequences)
        var frames: [[UInt8]] = []
        for (index, payload) in payloads.enumerated() {
            controlSequence += 1
            let notification = Notification(
                name: name, payload: payload, headers: index == payloads.count - 1 ? ["final": "1"] : [:],
                sequence: controlSequence, publisherID: configuration.publisherID,
                timestamp: Timestamps.wallClockNanoseconds())
            if let frame = try? EnvelopeCodec.encode(notification) { frames.append(frame) }
        }
        repeat {
            for frame in frames { try? publisher.send(frame, mode: .dontWait) }
            let resendAt = min(deadline, Timestamps.monotonicNanoseconds() + 20_000_000)
            while !awaitingAcknowledgement().isEmpty, Timestamps.monotonicNanoseconds() < resendAt {
                var poller = Poller()
                poller.register(publisher)
                _ = try? poller.poll(timeoutMilliseconds: remainingMilliseconds(until: resendAt))
                _ = readSubscriptions()
            }
        } while !awaitingAcknowledgement().isEmpty && Timestamps.monotonicNanoseconds() < deadline
        stats.endOfStreamUnacknowledged = UInt64(awaitingAcknowledgement().count)
    }

    /// NotificationBus subscribers (other than this bus itself) that have not acknowledged the end of stream.
    private func awaitingAcknowledgement() -> Set<UInt64> {
        Set(view.presence.keys).subtracting(view.endOfStreamAcknowledged).subtracting([configuration.publisherID])
    }

    private func remainingMilliseconds(until deadline: UInt64) -> Int {
        let now = Timestamps.monotonicNanoseconds()
        return deadline > now ? Int((deadline - now) / 1_000_000) + 1 : 0
    }

    /// Flushes what it can within the close timeout, then ends every subscription and waiter
    /// and closes the sockets and the context.
    private func shutDown() {
        var queued = MessageBatch(capacity: 1)
        var jobs: [UnownedJob] = []
        core.changeInterest { $0.closed = true }
        let leftovers = core.mailbox.withLock { box in
            box.closed = true
            swap(&box.jobs, &jobs)
            swap(&box.outbound, &queued)
            defer {
                box.commands.removeAll()
                box.spaceWaiters.removeAll()
            }
            return (box.commands, box.spaceWaiters)
        }
        for waiter in leftovers.1 { waiter.resume() }
        // Tasks still on the bus's executor go on elsewhere: nothing here runs jobs any more.
        let executor = self.executor.asUnownedTaskExecutor()
        for job in jobs { DispatchQueue.global().async { job.runSynchronously(on: executor) } }
        for command in leftovers.0 {
            switch command {
            case .addWaiter(let waiter): finishWaiter(waiter, .failure(.closed))
            case .addSubscription(let storage): storage.finishFromBus()
            default: break
            }
        }
        let deadline = Timestamps.monotonicNanoseconds() + UInt64(configuration.closeTimeoutMilliseconds) * 1_000_000
        flushPending(until: deadline)
        // Then what was still in the mailbox, in order after what the I/O thread had taken.
        if pending.unsentCount == 0 {
            swap(&pending, &queued)
            flushPending(until: deadline)
        }
        stats.unsent += UInt64(pending.removeAll() + queued.removeAll())
        sendEndOfStream(sequences: core.mailbox.withLock { $0.sequences.all }, deadline: deadline)
        // Let ZeroMQ deliver what it already holds, within the same timeout.
        try? publisher?.set(.linger, configuration.closeTimeoutMilliseconds)
        receiver.finishAll()
        for waiter in waiters { finishWaiter(waiter, .failure(.closed)) }
        waiters.removeAll()
        stats.activeSubscriptions = 0
        publishStats()
        closeSockets()
        context.terminate()
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes begin with `prefix` (one `memcmp`).
    @inline(__always)
    func hasPrefix(_ prefix: UnsafeRawBufferPointer) -> Bool {
        guard prefix.count <= count else { return false }
        guard let base = baseAddress, let prefixBase = prefix.baseAddress else { return true }
        return memcmp(base, prefixBase, prefix.count) == 0
    }
}
