#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// The ZAP handler of a broker without CURVE: admits every subscriber handshake, at the pace
/// `SubscriberAdmission` sets, so a storm of connections coming and going cannot keep the
/// forwarding thread inside libzmq (issue 38, item 2). Only the backend names a ZAP domain, so
/// publishers never pass here.
///
/// Its thread (`nbus-admit`) owns a ROUTER bound at `inproc://zeromq.zap.01` (a REP could not
/// hold a request while answering the next). Start it before the backend binds; stop it after
/// the backend closed. Should it be missing, libzmq lets handshakes through unheld (the backend
/// does not enforce the domain): a pacing, not a lock.
final class SubscriberAdmissionGate: Sendable {
    /// The ZAP domain the backend names.
    static let domain = "subscribers"

    /// Counters the thread publishes.
    struct Counts: Sendable, Equatable {
        var admitted: UInt64 = 0
        var held: UInt64 = 0
        var abandoned: UInt64 = 0
        var gone: UInt64 = 0
    }

    private final class Shared: Sendable {
        let wake: WakeSignal
        let stopRequested = Atomic<Bool>(false)
        let counts = Mutex(Counts())
        init(wake: WakeSignal) { self.wake = wake }
    }

    private let shared: Shared
    private let thread: Mutex<pthread_t?>

    /// Binds the handler on the caller's thread and starts the thread that owns it.
    /// `forwarderAge` says how long ago the forwarding loop began its last round (ns).
    init(
        context: Context, settings: SubscriberAdmissionSettings = .init(),
        forwarderAge: @escaping @Sendable () -> UInt64
    ) throws(BusError) {
        let shared: Shared
        let handler: Socket
        do throws(ZMQError) {
            shared = Shared(wake: try WakeSignal())
            handler = try context.socket(.router)
            do throws(ZMQError) {
                try handler.set(.linger, .zero)
                // A reply to a session that ended fails (EHOSTUNREACH) instead of vanishing: its
                // turn goes to the next handshake.
                try handler.set(.routerMandatory, true)
                try handler.bind(ZAPRequest.handlerEndpoint)
            } catch {
                handler.close()
                throw error
            }
        } catch {
            throw .transport(error)
        }
        self.shared = shared
        let handoff = ThreadHandoff(value: handler)
        do {
            let handle = try spawnThread(named: "nbus-admit") {
                Self.run(shared, handler: handoff.value, settings: settings, forwarderAge: forwarderAge)
                handoff.value.close()
            }
            thread = Mutex(handle)
        } catch {
            handler.close()
            throw error
        }
    }

    deinit {
        stop()
    }

    var counts: Counts { shared.counts.withLock { $0 } }

    /// Stops the thread and closes its socket; call it after the backend has closed.
    func stop() {
        shared.stopRequested.store(true, ordering: .releasing)
        shared.wake.signal()
        if let handle = thread.withLock({ $0.take() }) { pthread_join(handle, nil) }
    }

    /// A held request: the ROUTER's routing id of the asking session, then the request's frames.
    private static func run(
        _ shared: Shared, handler: Socket, settings: SubscriberAdmissionSettings,
        forwarderAge: @Sendable () -> UInt64
    ) {
        var admission = SubscriberAdmission<[[UInt8]]>(settings: settings)
        var published = Counts()
        /// Admits one handshake; false when its session has ended (the ROUTER knows it no more).
        func reply(to request: [[UInt8]], on handler: Socket) throws(ZMQError) -> Bool {
            let reply = ZAPReply(requestID: request[3], status: .success, statusText: "OK")
            do throws(ZMQError) {
                try handler.send(multipart: [request[0], []] + reply.frames, mode: .dontWait)
                return true
            } catch {
                if error.kind == .contextTerminated { throw error }
                // EHOSTUNREACH: gone. EAGAIN (never: one request per session) fails that handshake.
                return error.code != EHOSTUNREACH
            }
        }
        while !shared.stopRequested.load(ordering: .acquiring) {
            var poller = Poller()
            poller.register(fileDescriptor: shared.wake.fileDescriptor)
            poller.register(handler)
            do {
                try poller.poll(timeoutMilliseconds: admission.retryMilliseconds ?? -1)
            } catch {
                if error.kind == .contextTerminated { return }
                usleep(10_000)
                continue
            }
            shared.wake.drain()
            do throws(ZMQError) {
                var answers: [[[UInt8]]] = []
                while let frames = try handler.receiveMultipartIfReady() {
                    // [routing id, "", version, request id, domain, address, identity, mechanism, ...]
                    guard frames.count >= 8, frames[1].isEmpty else { continue }  // libzmq never sends these
                    let now = Timestamps.monotonicNanoseconds()
                    guard String(decoding: frames[4], as: UTF8.self) == domain else {
                        // Not the backend: answer at once (no other socket names a domain here).
                        _ = try reply(to: frames, on: handler)
                        continue
                    }
                    answers += admission.arrived(frames, now: now, forwarderAge: forwarderAge())
                }
                answers += admission.due(now: Timestamps.monotonicNanoseconds(), forwarderAge: forwarderAge())
                while !answers.isEmpty {
                    var gone = 0
                    for request in answers {
                        if try reply(to: request, on: handler) { continue }
                        admission.wasGone()
                        gone += 1
                    }
                    // The turns of those gone go to the next ones now.
                    answers = gone > 0 ? admission.due(now: Timestamps.monotonicNanoseconds(), forwarderAge: forwarderAge()) : []
                }
            } catch {
                if error.kind == .contextTerminated { return }
            }
            let counts = Counts(
                admitted: admission.admitted, held: admission.held, abandoned: admission.abandoned, gone: admission.gone)
            if counts != published {
                published = counts
                shared.counts.withLock { $0 = counts }
            }
        }
    }
}
