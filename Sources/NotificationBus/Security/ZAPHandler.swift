#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// The authentication thread of a CURVE server (the broker, or a bus that binds): it owns the ZAP
/// handler socket of one context (a REP bound at `inproc://zeromq.zap.01`) and the readers of the
/// server sockets' monitors, answers every handshake from the allow lists, and counts and reports
/// every outcome.
///
/// Start it before the guarded sockets exist; pass each to `guardSocket` before it binds, and stop
/// its monitor and close it before calling `stop()`, so a handshake is never left without a
/// handler and a monitor never without its reader (libzmq would block on it).
final class ZAPHandler: Sendable {
    /// What the handler's thread shares with its owner. The thread holds this, not the handler,
    /// so dropping the handler stops the thread.
    private final class Shared: Sendable {
        let authenticator: Mutex<CurveAuthenticator>
        let wake: WakeSignal
        let stopRequested = Atomic<Bool>(false)

        init(authenticator: CurveAuthenticator, wake: WakeSignal) {
            self.authenticator = Mutex(authenticator)
            self.wake = wake
        }
    }

    private let shared: Shared
    private let thread: Mutex<pthread_t?>
    private let monitorPrefix: String

    /// Binds the handler and connects a monitor reader per domain on the caller's thread, then
    /// starts the thread that owns them; returns at once (nothing waits for another thread).
    /// `onEvent` runs on that thread.
    init(
        context: Context, allowLists: [AuthenticationDomain: CurveAllowList?],
        onEvent: (@Sendable (AuthenticationEvent) -> Void)?,
        onConnectionEvent: (@Sendable (SocketEvent, AuthenticationDomain) -> Void)? = nil,
        onAdmission: (@Sendable (_ key: String, _ address: String, AuthenticationDomain) -> Void)? = nil
    ) throws(BusError) {
        let shared: Shared
        do {
            shared = Shared(authenticator: CurveAuthenticator(allowLists: allowLists), wake: try WakeSignal())
        } catch {
            throw .transport(error)
        }
        self.shared = shared
        let prefix = "inproc://nbus-zap-monitor-\(UInt64.random(in: 1...UInt64.max))-"
        monitorPrefix = prefix
        var made: [Socket] = []
        let sockets: (handler: Socket, monitors: [(AuthenticationDomain, Socket)])
        do throws(ZMQError) {
            let handler = try context.socket(.rep)
            made.append(handler)
            try handler.set(.linger, .zero)
            try handler.bind(ZAPRequest.handlerEndpoint)
            var monitors: [(AuthenticationDomain, Socket)] = []
            for domain in allowLists.keys.sorted() {
                let reader = try context.socket(.pair)
                made.append(reader)
                try reader.set(.linger, .zero)
                // No limit: libzmq's monitor sends block its I/O thread when this queue is full.
                try reader.set(.receiveHighWaterMark, 0)
                try reader.connect(prefix + domain.rawValue)
                monitors.append((domain, reader))
            }
            sockets = (handler, monitors)
        } catch {
            for socket in made { socket.close() }
            throw .transport(error)
        }
        let handoff = ThreadHandoff(value: sockets)
        do {
            let handle = try spawnThread(named: "nbus-zap") {
                let sockets = handoff.value
                Self.run(
                    shared, handler: sockets.handler, monitors: sockets.monitors, onEvent: onEvent,
                    onConnectionEvent: onConnectionEvent, onAdmission: onAdmission)
                for (_, reader) in sockets.monitors { reader.close() }
                sockets.handler.close()
            }
            thread = Mutex(handle)
        } catch {
            for socket in made { socket.close() }
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Makes `socket` a CURVE server with `keyPair` whose handshakes this handler decides as
    /// `domain`, and whose failed handshakes it counts (through the socket's monitor). Call it on
    /// the socket's own thread, before it binds; stop the monitor and close it before `stop()`.
    func guardSocket(
        _ socket: Socket, as domain: AuthenticationDomain, keyPair: CurveKeyPair, alsoMonitoring extra: SocketEvents = []
    ) throws(ZMQError) {
        try socket.set(.curveServer, true)
        try socket.set(.curveSecretKey, try Z85.decode(keyPair.secretKey))
        try socket.set(.zapDomain, domain.rawValue)
        // Fail closed should the handler ever be missing (libzmq 4.3 would admit anyone otherwise);
        // a libzmq that cannot is refused (the error reaches the caller), never run open.
        try socket.set(.zapEnforceDomain, true)
        // One monitor per socket in libzmq: events others need (a broker's connection count)
        // come through this one too.
        try socket.monitor(monitorPrefix + domain.rawValue, events: SocketEvents.handshakeFailures.union(extra))
    }

    /// Every outcome so far, by domain.
    var counts: [AuthenticationDomain: AuthenticationCounts] {
        shared.authenticator.withLock { $0.counts }
    }

    /// Stops the thread and closes its sockets; call it after the guarded sockets have closed.
    func stop() {
        shared.stopRequested.store(true, ordering: .releasing)
        shared.wake.signal()
        if let handle = thread.withLock({ $0.take() }) { pthread_join(handle, nil) }
    }

    /// The thread's loop: answers requests and reads monitors until `stop()`.
    private static func run(
        _ shared: Shared, handler: Socket, monitors: [(AuthenticationDomain, Socket)],
        onEvent: (@Sendable (AuthenticationEvent) -> Void)?,
        onConnectionEvent: (@Sendable (SocketEvent, AuthenticationDomain) -> Void)?,
        onAdmission: (@Sendable (String, String, AuthenticationDomain) -> Void)?
    ) {
        // Error policy: would-block is a value (`...IfReady`); a terminated context ends the
        // thread; a failing poll backs off rather than spin. A reply the REP cannot send is lost
        // with its handshake, which libzmq then fails (and the client's monitor counts).
        while !shared.stopRequested.load(ordering: .acquiring) {
            var poller = Poller()
            poller.register(fileDescriptor: shared.wake.fileDescriptor)
            poller.register(handler)
            for (_, reader) in monitors { poller.register(reader) }
            do {
                try poller.poll(timeoutMilliseconds: -1)
            } catch {
                if error.kind == .contextTerminated { return }
                usleep(10_000)
                continue
            }
            shared.wake.drain()
            var events: [AuthenticationEvent] = []
            do throws(ZMQError) {
                while let frames = try handler.receiveMultipartIfReady() {
                    let now = Timestamps.monotonicNanoseconds()
                    guard let request = ZAPRequest(frames: frames) else {
                        // libzmq never sends these; answer so the REP socket can take the next request.
                        let reply = ZAPReply(
                            requestID: frames.count > 1 ? frames[1] : [], status: .internalError,
                            statusText: "malformed request")
                        try handler.send(multipart: reply.frames)
                        continue
                    }
                    let (reply, event) = shared.authenticator.withLock { $0.answer(request, now: now) }
                    // Every admission (events are rate-limited), so a broker can tell each connection's key.
                    if let onAdmission, reply.status == .success, let key = request.curvePublicKey,
                        let domain = AuthenticationDomain(rawValue: request.domain)
                    {
                        onAdmission(key, request.address, domain)
                    }
                    try handler.send(multipart: reply.frames)
                    if let event { events.append(event) }
                }
                for (domain, reader) in monitors {
                    while let frames = try reader.receiveMultipartIfReady() {
                        guard let socketEvent = SocketEvent(frames: frames) else { continue }
                        if !socketEvent.event.isDisjoint(with: ConnectionTracker.events) {
                            onConnectionEvent?(socketEvent, domain)
                            continue
                        }
                        let now = Timestamps.monotonicNanoseconds()
                        if let event = shared.authenticator.withLock({ $0.record(socketEvent, domain: domain, now: now) }) {
                            events.append(event)
                        }
                    }
                }
            } catch {
                if error.kind == .contextTerminated { return }
            }
            if let onEvent { for event in events { onEvent(event) } }
        }
    }
}
