#if canImport(Glibc)
import Glibc
#endif
import ZeroMQ

/// A bus's sockets: created, secured and attached by `Bus.init` on the caller's thread (calls that
/// return at once: nothing waits for another thread), then handed to the event loop, which owns
/// them from its first instruction to `close()`. Knows ZeroMQ, never NBP/1's rules.
final class BusSockets {
    let context: Context
    /// The publishing sockets: one, or one per broker (`BusConfiguration.publisherPaths`).
    private(set) var publishers: [Socket] = []
    /// The subscribing sockets: one, or one per endpoint (`BusConfiguration.subscriberPaths`).
    private(set) var subscribers: [Socket] = []
    /// The first (with one path, the only) publishing socket.
    var publisher: Socket? { publishers.first }
    /// The first (with one path, the only) subscribing socket.
    var subscriber: Socket? { subscribers.first }
    /// The endpoints attached, publisher side first, with real ports for `tcp://...:*`.
    private(set) var resolvedEndpoints: [String] = []
    /// The subscriber is connected to this bus's own inproc publisher endpoint: the SUB socket is
    /// not connected there (posts are routed to local subscriptions directly), so nothing arrives twice.
    private(set) var loopback = false
    /// Readers of the connecting sockets' monitors (handshake failures; the publisher's also
    /// disconnections), with whether the socket is a publisher and its path.
    private(set) var handshakeMonitors: [(reader: Socket, isPublisher: Bool, path: Int)] = []
    /// Subscribing paths whose connection came up or went down since the loop last took them,
    /// in order (several paths only: the receiver waits for a path only while it is up).
    var subscriberPathChanges: [(path: Int, connected: Bool)] = []
    /// When `readHandshakeFailures` last began reading the monitors (monotonic ns): what
    /// `subscriberPathChanges` says holds for whatever was received before it.
    private(set) var subscriberPathsReadAt: UInt64 = 0
    /// Subscribing connections that came back after one on the same endpoint had passed its
    /// handshake and dropped (a broker that restarted): their path and endpoint, in order, until
    /// the loop takes them (retained snapshots are asked for again there, NBP-1 §18).
    var subscriberReconnections: [(path: Int, endpoint: String)] = []
    /// The subscribing endpoints whose connection passed a handshake at least once.
    private var subscriberEndpointsEverUp: Set<String> = []
    /// Several brokers: whether each publishing path's connection is up. A path without one
    /// takes every send and drops it (`ZMQ_IMMEDIATE`, no pipe), so it must never count as the
    /// path that carries the stream while another is given up on. Up from the start where no
    /// monitor can say (inproc), down until the handshake otherwise.
    private(set) var publisherPathUp: [Bool] = []
    /// How many times the connecting publisher lost a connection (a broker that died or
    /// restarted): its subscribers vanish at once then, and may come back through the next one.
    private(set) var publisherDisconnections: UInt64 = 0
    /// Handshakes failed since the last one that succeeded (on any connecting socket).
    private(set) var handshakeFailuresInARow = 0
    /// Connections made and lost by the connecting sockets since the loop last took them (for
    /// `BusConfiguration.logger`); the event loop empties it after every read of the monitors.
    var connectionEvents: [ConnectionEvent] = []
    /// Endpoints whose connection passed its handshake and has not dropped since: a connection
    /// counts as made (and lost) only then, not for each attempt a server refuses.
    private var handshakenEndpoints: Set<String> = []
    /// The connecting sockets' endpoints whose connection is up (`BusStats.connectedEndpoints`).
    var connectedEndpointCount: Int { handshakenEndpoints.count }
    /// Readers of the binding sockets' monitors (connections accepted and ended), only when the
    /// logger logs them: nothing else needs them.
    private(set) var acceptMonitors: [(reader: Socket, isPublisher: Bool)] = []
    /// The connections the binding sockets accepted and still hold: libzmq names an accepted
    /// connection and its end by the same file descriptor (per monitor, as `acceptMonitors`).
    private var acceptedConnections: [Set<UInt32>] = []
    /// The ipc and tcp endpoints this bus listens on (resolved), for the memory guard's re-bind.
    private(set) var boundEndpoints: [(socket: Socket, endpoint: String)] = []
    /// CURVE server: the thread answering ZAP requests for this bus's context.
    private(set) var authentication: ZAPHandler?
    /// A publisher that keeps its subscribers' budget (`BusConfiguration.publisherWatchesSubscribers`):
    /// the connections its socket accepted, by descriptor (with the peer's process over ipc), fed by
    /// its accept monitor (by the ZAP handler's thread with CURVE, which owns that monitor).
    let subscriberConnections: ConnectionTracker?
    private let configuration: BusConfiguration

    /// Creates the context and every socket, applies the options, CURVE and monitors, then binds
    /// and connects. On failure everything made so far is closed before the error is thrown.
    init(_ configuration: BusConfiguration) throws(BusError) {
        self.configuration = configuration
        subscriberConnections = configuration.publisherWatchesSubscribers ? ConnectionTracker(fileLimit: nil, onEvent: nil) : nil
        do {
            // Blocky: close() sets the publisher's linger so queued frames (and the end-of-stream
            // record) still reach subscribers; every socket starts with linger 0 so nothing else waits.
            context = try Context(ioThreads: 1, blocky: true)
        } catch {
            throw .transport(error)
        }
        do {
            try open()
        } catch {
            close()
            context.terminate()
            throw error
        }
    }

    private func open() throws(BusError) {
        if let server = configuration.curveServer,
            (configuration.publish + configuration.subscribe).contains(where: \.isBind)
        {
            // Bound before any CURVE socket binds, so no handshake ever finds no handler.
            let allowed = server.allowedClients
            // The publisher's connections come through the ZAP handler's monitor of its socket.
            var onConnectionEvent: (@Sendable (SocketEvent, AuthenticationDomain) -> Void)?
            if let tracker = subscriberConnections {
                onConnectionEvent = { event, domain in
                    if domain == .subscribers { tracker.record(event, side: .subscriber) }
                }
            }
            authentication = try ZAPHandler(
                context: context, allowLists: [.subscribers: allowed, .publishers: allowed],
                onEvent: server.onAuthentication, onConnectionEvent: onConnectionEvent)
        }
        if !configuration.publish.isEmpty {
            let paths = configuration.publisherPaths
            for path in 0..<paths {
                try openPublisher(paths == 1 ? configuration.publish : [configuration.publish[path]], path: path)
            }
            if paths > 1 {
                publisherPathUp = (0..<paths).map { path in !handshakeMonitors.contains { $0.isPublisher && $0.path == path } }
            }
        }
        if !configuration.subscribe.isEmpty {
            let paths = configuration.subscriberPaths
            for path in 0..<paths {
                try openSubscriber(paths == 1 ? configuration.subscribe : [configuration.subscribe[path]], path: path)
            }
        }
    }

    private func openPublisher(_ attachments: [Attachment], path: Int) throws(BusError) {
        let configuration = self.configuration
        let socket = try transport { () throws(ZMQError) in try context.socket(.xpub) }
        publishers.append(socket)
        try transport { () throws(ZMQError) in
            // A binding publisher's mark from its per-subscriber budget, set once (see
            // SubscriberQueueBudget for why it never changes on the running socket).
            try socket.set(
                .sendHighWaterMark,
                configuration.publisherUsesBudget
                    ? SubscriberQueueBudget.mark(budget: configuration.subscriberBudget, fixedMark: configuration.sendHighWaterMark)
                    : configuration.sendHighWaterMark)
            // What arrives on an XPUB is subscription messages: bound their size (a huge one
            // overflows libzmq's recursive trie when removed) by disconnecting the sender.
            // A little slack over the broker's own limit: a subscription it forwards may arrive
            // here as a ZMTP command a few bytes longer (a replay after a reconnection).
            try socket.set(.maximumMessageSize, Int64(WireFormat.maximumSubscriptionLength + 64))
            // Keeping the budget needs the refusals too: the loop decides who is waited for
            // (`SubscriberBudgetPolicy`), never libzmq's silent drop at the mark.
            try SubscriberBudgetSide.refusesAtFullQueues(socket, configuration.publisherBackpressure || configuration.publisherWatchesSubscribers)
            try socket.set(.linger, .zero)
            // A connected publisher (brokered) must forget a lost broker's subscriptions: with
            // the default, libzmq keeps the pipe across the outage, so the stale subscriptions
            // (and presence) stay and a restarted broker's replay of them is deduplicated away.
            // With IMMEDIATE the pipe ends with the connection (XPUB reports every topic as
            // unsubscribed) and a reconnection brings the new broker's subscriptions afresh.
            // Posts made while disconnected go nowhere; subscribers count them as gaps.
            try socket.set(.immediate, true)
            try ConnectionKeepalive.apply(to: socket, interval: configuration.heartbeatInterval, timeout: configuration.heartbeatTimeout)
            // By default on connecting publishers only (their peers are brokers); see sendStallLimit.
            if configuration.sendStallLimit > .zero {
                try socket.set(.tcpMaximumRetransmitTime, .milliseconds(Timestamps.boundedMilliseconds(configuration.sendStallLimit)))
            }
        }
        try secure(socket, attachments, clients: .subscribers, path: path)
        try monitorAccepted(of: socket, attachments, isPublisher: true)
        for attachment in attachments { try transport { () throws(ZMQError) in try attach(socket, attachment) } }
        subscriberConnections?.setListening(boundEndpoints.map(\.endpoint))
    }

    private func openSubscriber(_ attachments: [Attachment], path: Int) throws(BusError) {
        let configuration = self.configuration
        let socket = try transport { () throws(ZMQError) in try context.socket(.sub) }
        subscribers.append(socket)
        try transport { () throws(ZMQError) in
            try socket.set(.receiveHighWaterMark, configuration.receiveHighWaterMark)
            // A SUB sends its subscriptions through its send pipe, and libzmq drops them at the
            // send mark (1,000 by default) without a word: a subscriber of many patterns, or
            // one reconnecting to a broker, would silently lose subscriptions. Unbounded here:
            // there are only as many as this bus's patterns (twice, with presence).
            try socket.set(.sendHighWaterMark, 0)
            // Not the kernel's autotuned megabyte when asked (a slow consumer behind a budget).
            if let bytes = configuration.receiveBufferBytes { try socket.set(.receiveBuffer, Int32(bytes)) }
            // A peer cannot make this process hold a frame of any size (NBP-1 §6).
            // Twice the largest frame for the larger of this bus's maximum payload and NBP/1's
            // default: a publisher on the default may send a payload this bus refuses, and
            // that must cost one counted rejection (payloadTooLarge), not the connection.
            let payloadBound = max(configuration.maximumPayload, WireFormat.defaultMaximumPayload)
            try socket.set(.maximumMessageSize, WireFormat.transportFrameLimit(maximumPayload: payloadBound))
            try socket.set(.linger, .zero)
            // TCP keepalive, never ZMTP heartbeats: see ConnectionKeepalive for the abort they cause.
            try ConnectionKeepalive.apply(to: socket, interval: configuration.heartbeatInterval, timeout: configuration.heartbeatTimeout)
            try socket.subscribe(ControlNames.endOfStreamPrefix)
        }
        try secure(socket, attachments, clients: .publishers, path: path)
        try monitorAccepted(of: socket, attachments, isPublisher: false)
        let ownEndpoints = Set(configuration.publish.compactMap { attachment -> String? in
            guard case .bind(let endpoint) = attachment, endpoint.hasPrefix("inproc://") else { return nil }
            return endpoint
        })
        for attachment in attachments {
            if case .connect(let endpoint) = attachment, ownEndpoints.contains(endpoint) {
                loopback = true
                resolvedEndpoints.append(endpoint)
                continue
            }
            try transport { () throws(ZMQError) in try attach(socket, attachment) }
        }
    }

    /// Runs socket calls, their `ZMQError` as `BusError.transport`.
    private func transport<Result>(_ body: () throws(ZMQError) -> Result) throws(BusError) -> Result {
        do { return try body() } catch { throw .transport(error) }
    }

    /// Applies `configuration.curve` (connecting sockets) or `curveServer` (binding ones) to
    /// `socket`, before it attaches. `clients` is who connects to it when it binds.
    private func secure(_ socket: Socket, _ attachments: [Attachment], clients: AuthenticationDomain, path: Int) throws(BusError) {
        guard configuration.curve != nil || configuration.curveServer != nil else {
            // A plaintext client of a CURVE server is dropped at every handshake and would never
            // know why: its monitor counts the mechanism mismatch (inproc has no handshake).
            let connectsOverNetwork = attachments.contains {
                if case .connect(let endpoint) = $0 { return !endpoint.hasPrefix("inproc://") }
                return false
            }
            if connectsOverNetwork {
                try transport { () throws(ZMQError) in try monitorHandshakes(of: socket, isPublisher: clients == .subscribers, path: path) }
            }
            return
        }
        let binds = attachments.contains(where: \.isBind)
        let connects = attachments.contains { !$0.isBind }
        if binds && connects {
            throw .security(
                "a socket that both binds and connects cannot use CURVE (\(attachments.map(\.description).joined(separator: ", ")))")
        }
        if binds, let server = configuration.curveServer, let authentication {
            let watched = clients == .subscribers && subscriberConnections != nil
            try transport { () throws(ZMQError) in
                try authentication.guardSocket(
                    socket, as: clients, keyPair: server.keyPair, alsoMonitoring: watched ? ConnectionTracker.events : [])
            }
        } else if connects, let client = configuration.curve {
            try transport { () throws(ZMQError) in
                try socket.set(.curveServerKey, try Z85.decode(client.serverPublicKey))
                try socket.set(.curvePublicKey, try Z85.decode(client.keyPair.publicKey))
                try socket.set(.curveSecretKey, try Z85.decode(client.keyPair.secretKey))
                try monitorHandshakes(of: socket, isPublisher: clients == .subscribers, path: path)
            }
        }
    }

    private func monitorHandshakes(of socket: Socket, isPublisher: Bool, path: Int) throws(ZMQError) {
        // Successes too (one per connection): they end a run of failures. Connections made and
        // lost: the publisher's losses matter at close, and both are logged (reconnects).
        let events = SocketEvents.handshakeFailures.union([.handshakeSucceeded, .disconnected])
        handshakeMonitors.append((try context.monitorReader(for: socket, events: events), isPublisher, path))
    }

    /// Connections a binding socket accepts and loses, for the logger (debug level) and, on a
    /// publisher that keeps its subscribers' budget, for `subscriberConnections`, over ipc and tcp
    /// (inproc has no connection events). libzmq keeps one monitor per socket, and a second one
    /// stops the first: so not for a socket that also connects (it has its handshake monitor),
    /// nor for a CURVE server's (the ZAP handler monitors it, counting failed handshakes).
    private func monitorAccepted(of socket: Socket, _ attachments: [Attachment], isPublisher: Bool) throws(BusError) {
        let needed = BusLog(configuration.logger).enabled || (isPublisher && subscriberConnections != nil)
        guard needed, configuration.curveServer == nil, attachments.allSatisfy(\.isBind),
            attachments.contains(where: { if case .bind(let endpoint) = $0 { !endpoint.hasPrefix("inproc://") } else { false } })
        else { return }
        try transport { () throws(ZMQError) in
            acceptMonitors.append((try context.monitorReader(for: socket, events: [.accepted, .disconnected]), isPublisher))
        }
        acceptedConnections.append([])
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

    /// Failed handshakes the monitors reported since the last call (never blocks); counts the
    /// publisher's disconnections on the way.
    func readHandshakeFailures() throws(ZMQError) -> [HandshakeFailure] {
        var failures: [HandshakeFailure] = []
        if subscribers.count > 1 { subscriberPathsReadAt = Timestamps.monotonicNanoseconds() }
        for (reader, isPublisher, path) in handshakeMonitors {
            while let frames = try reader.receiveMultipartIfReady() {
                guard let event = SocketEvent(frames: frames) else { continue }
                if let failure = event.handshakeFailure {
                    failures.append(failure)
                    handshakeFailuresInARow += 1
                }
                if event.event.contains(.handshakeSucceeded) { handshakeFailuresInARow = 0 }
                if isPublisher && event.event.contains(.disconnected) { publisherDisconnections &+= 1 }
                // Made: the handshake passed; lost: one that had passed dropped. Bounded: the loop
                // takes them after every read (a few per reconnect).
                let made = event.event.contains(.handshakeSucceeded) && handshakenEndpoints.insert(event.endpoint).inserted
                let lost = event.event.contains(.disconnected) && handshakenEndpoints.remove(event.endpoint) != nil
                if !isPublisher && made && !subscriberEndpointsEverUp.insert(event.endpoint).inserted
                    && subscriberReconnections.count < 64
                {
                    subscriberReconnections.append((path, event.endpoint))
                }
                if !isPublisher && subscribers.count > 1 && (made || lost) {
                    subscriberPathChanges.append((path, made))
                }
                if isPublisher && publisherPathUp.indices.contains(path) && (made || lost) {
                    publisherPathUp[path] = made
                }
                if (made || lost) && connectionEvents.count < 64 {
                    connectionEvents.append(ConnectionEvent(endpoint: event.endpoint, connected: made, isPublisher: isPublisher))
                }
            }
        }
        try readAcceptEvents()
        return failures
    }

    /// Reads the binding sockets' accept monitors: connections made and lost, for the logger and
    /// `subscriberConnections` (never blocks; libzmq's monitor queue is unbounded, so a reader
    /// that falls behind costs memory, not its I/O thread).
    func readAcceptEvents() throws(ZMQError) {
        for (index, (reader, isPublisher)) in acceptMonitors.enumerated() {
            while let frames = try reader.receiveMultipartIfReady() {
                guard let event = SocketEvent(frames: frames) else { continue }
                if isPublisher { subscriberConnections?.record(event, side: .subscriber) }
                // A disconnection of a connection this side did not accept (none on a binding
                // socket, but the pairing keeps the count honest) is not logged.
                let accepted = event.event.contains(.accepted) && acceptedConnections[index].insert(event.value).inserted
                let ended = event.event.contains(.disconnected) && acceptedConnections[index].remove(event.value) != nil
                if (accepted || ended) && connectionEvents.count < 64 {
                    connectionEvents.append(
                        ConnectionEvent(
                            endpoint: event.endpoint, connected: accepted, isPublisher: isPublisher,
                            acceptedHere: true, open: acceptedConnections[index].count))
                }
            }
        }
    }

    /// Drops every connection of the bound endpoints by re-binding them (`Socket.rebind`): the
    /// memory guard's last resort. Returns the endpoints it could not re-bind, with why.
    func rebindEndpoints() -> [(endpoint: String, error: ZMQError)] {
        var failed: [(endpoint: String, error: ZMQError)] = []
        for (socket, endpoint) in boundEndpoints {
            do {
                // libzmq reports none of the connections the unbind ends.
                try socket.rebind(endpoint) { subscriberConnections?.forgetConnections(acceptedOn: endpoint) }
            } catch {
                failed.append((endpoint, error))
            }
        }
        return failed
    }

    /// Lets ZeroMQ deliver what the publisher already holds for up to `milliseconds` on close;
    /// the paths in `givenUp` (parked: the other brokers carried the stream) only for
    /// `givenUpMilliseconds`, what is left of the close timeout: a broker that took nothing for
    /// the stall limit would otherwise hold the close for a whole timeout more, and a frozen one
    /// that wakes within it still hands on what it took (a foreign subscriber reached through it
    /// alone depends on that: the bus cannot tell whether the others reach it).
    func lingerOnClose(milliseconds: Int32, givenUp: [Int] = [], givenUpMilliseconds: Int32 = 0) throws(ZMQError) {
        for (index, publisher) in publishers.enumerated() {
            try publisher.set(.linger, .milliseconds(givenUp.contains(index) ? givenUpMilliseconds : milliseconds))
        }
    }

    /// Stops the monitors before their readers, closes every socket, then stops the ZAP handler.
    func close() {
        for socket in publishers + subscribers { socket.stopMonitoring() }
        for monitor in handshakeMonitors { monitor.reader.close() }
        for monitor in acceptMonitors { monitor.reader.close() }
        handshakeMonitors.removeAll()
        for socket in publishers + subscribers { socket.close() }
        publishers.removeAll()
        subscribers.removeAll()
        boundEndpoints.removeAll()
        authentication?.stop()
        authentication = nil
    }
}

/// A connecting socket reached its peer, or lost it (libzmq reconnects on its own).
struct ConnectionEvent {
    let endpoint: String
    let connected: Bool
    let isPublisher: Bool
    /// A binding socket accepted the connection (a peer connected here), rather than this side connecting.
    var acceptedHere = false
    /// With `acceptedHere`: the connections that socket holds now.
    var open = 0
}
