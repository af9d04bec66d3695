import FoundationEssentials
import Synchronization
import ZeroMQ

/// A bridge between the bus and a local `NotificationCenter` for one message type
/// (`Bus.forward(_:to:)`, `Bus.forward(_:from:)`); it stops on `cancel()` or when dropped.
public final class MessageBridge: Sendable {
    /// What a bridge did so far.
    public struct Stats: Equatable, Sendable {
        /// Messages handed on (posted to the center, or to the bus).
        public var forwarded: UInt64 = 0
        /// Messages not handed on because they came from the other direction: into a center,
        /// this bus's own posts; onto the bus, what the bus bridge posted into the center.
        public var echoesSkipped: UInt64 = 0
        /// Messages the bus refused (closed, outbound queue full, not encodable), each counted.
        public var failed: UInt64 = 0
        /// The last refusal, if any.
        public var lastFailure: BusError?
    }

    private let state = Mutex(Stats())
    /// Told every new value of `stats` (tests await counters with it: a skipped echo has no
    /// other event to wait for).
    let statsListener = Mutex<(@Sendable (Stats) -> Void)?>(nil)
    private let stop: Mutex<(@Sendable () -> Void)?>

    init(stop: @escaping @Sendable () -> Void) {
        self.stop = Mutex(stop)
    }

    /// The bridge's counters now.
    public var stats: Stats { state.withLock { $0 } }

    /// Stops the bridge (and, into a center, unsubscribes at the publisher).
    public func cancel() {
        stop.withLock { $0.take() }?()
    }

    deinit { cancel() }

    func noteForwarded() { change { $0.forwarded += 1 } }
    func noteEcho() { change { $0.echoesSkipped += 1 } }
    func noteFailure(_ error: BusError) {
        change {
            $0.failed += 1
            $0.lastFailure = error
        }
    }

    private func change(_ body: (inout Stats) -> Void) {
        let now = state.withLock { stats in
            body(&stats)
            return stats
        }
        statsListener.withLock { $0 }?(now)
    }
}

/// Main-actor messages a bridge is posting into a center right now (by type), so the opposite
/// bridge, whose observer runs synchronously inside that `post`, knows them for echoes. Exact:
/// Foundation delivers a main-actor message synchronously on the main actor.
@MainActor
final class BridgeInjections {
    var types: [ObjectIdentifier: Int] = [:]

    nonisolated init() {}
}

extension Bus {
    // MARK: Bus -> NotificationCenter

    /// Posts every message of `type` that reaches this bus from another publisher into `center`,
    /// so Foundation observers (`center.addObserver(for:)`, `center.messages(of:for:)`) receive
    /// remote messages unchanged. In the bus's order per publisher. This bus's own posts are
    /// skipped (they came from this process: no echo). The type must have no `BusSubject`
    /// (Foundation's subject is an object of this process); `.subjectRequired` otherwise.
    public func forward<M: BusAsyncMessage>(_ type: M.Type, to center: NotificationCenter) throws(BusError) -> MessageBridge {
        try claimBridge(M.self, .intoCenter)
        let envelopes = try messageEnvelopes(of: M.self)
        let own = publisherID
        let registry = core.messageCoding
        let bridge = MessageBridge { [envelopes] in
            envelopes.cancel()
            registry.releaseBridge(ObjectIdentifier(M.self), .intoCenter)
        }
        Task { [weak bridge] in
            for await envelope in envelopes {
                guard let bridge else { return }
                if envelope.publisherID == own {
                    bridge.noteEcho()
                    continue
                }
                center.post(envelope.message)
                bridge.noteForwarded()
            }
        }
        return bridge
    }

    /// `forward(_:to:)` for a main-actor message type: posted into `center` on the main actor.
    public func forward<M: BusMainActorMessage>(_ type: M.Type, to center: NotificationCenter) throws(BusError) -> MessageBridge {
        guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
        let envelopes = try messageEnvelopes(of: M.self)
        let own = publisherID
        let injections = core.messageCoding.injections
        let bridge = MessageBridge { [envelopes] in envelopes.cancel() }
        Task { [weak bridge] in
            for await envelope in envelopes {
                guard let bridge else { return }
                if envelope.publisherID == own {
                    bridge.noteEcho()
                    continue
                }
                let message = envelope.message
                await MainActor.run {
                    injections.types[ObjectIdentifier(M.self), default: 0] += 1
                    defer { injections.types[ObjectIdentifier(M.self), default: 1] -= 1 }
                    center.post(message)
                }
                bridge.noteForwarded()
            }
        }
        return bridge
    }

    // MARK: NotificationCenter -> bus

    /// Posts every message of `type` posted to `center` onto this bus, in the order Foundation
    /// calls the bridge's observer. Refused (`.invalidConfiguration`) when this bus already
    /// forwards `type` into a center: an async message cannot be told apart from the bus
    /// bridge's own posts there, so it would echo (main-actor types can be bridged both ways).
    /// A post the bus refuses is counted in `stats.failed`, never thrown.
    public func forward<M: BusAsyncMessage>(_ type: M.Type, from center: NotificationCenter) throws(BusError) -> MessageBridge {
        guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
        guard !configuration.publish.isEmpty else { throw .notAPublisher }
        try claimBridge(M.self, .fromCenter)
        let registry = core.messageCoding
        let box = BridgeBox()
        let token = center.addObserver(of: M.Subject.self, for: NotificationCenter.BaseMessageIdentifier<M>()) {
            [weak self] message in
            guard let self, let bridge = box.bridge else { return }
            do throws(BusError) {
                try await self.post(message)
                bridge.noteForwarded()
            } catch {
                bridge.noteFailure(error)
            }
        }
        let bridge = MessageBridge {
            center.removeObserver(token)
            registry.releaseBridge(ObjectIdentifier(M.self), .fromCenter)
        }
        box.bridge = bridge
        return bridge
    }

    /// `forward(_:from:)` for a main-actor message type: the observer runs inside the center's
    /// `post`, on the main actor, and queues the message at once (`postNow`), so the bus keeps
    /// the posting order; a full outbound queue is counted in `stats.failed`. What the opposite
    /// bridge of this bus posts into the center is skipped (no echo).
    public func forward<M: BusMainActorMessage>(_ type: M.Type, from center: NotificationCenter) throws(BusError) -> MessageBridge {
        guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
        guard !configuration.publish.isEmpty else { throw .notAPublisher }
        let injections = core.messageCoding.injections
        let box = BridgeBox()
        let token = center.addObserver(of: M.Subject.self, for: NotificationCenter.BaseMessageIdentifier<M>()) {
            [weak self] message in
            guard let self, let bridge = box.bridge else { return }
            if injections.types[ObjectIdentifier(M.self), default: 0] > 0 {
                bridge.noteEcho()
                return
            }
            do throws(BusError) {
                try self.postNow(message)
                bridge.noteForwarded()
            } catch {
                bridge.noteFailure(error)
            }
        }
        let bridge = MessageBridge { center.removeObserver(token) }
        box.bridge = bridge
        return bridge
    }

    // MARK: Posting without waiting

    /// Posts `message` without waiting, from synchronous code: throws `.outboundQueueFull`
    /// rather than wait (as `postNow(name:payload:)`).
    public func postNow<M: BusMessage>(_ message: M, headers: NotificationHeaders = NotificationHeaders()) throws(BusError) {
        guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
        var headers = headers
        let span = tracer?.startSend(M.busName, payloadCount: nil, headers: &headers)
        defer { span?.end() }
        if M.busRetained {
            // State: posted retained, its JSON always made (an empty payload would clear it).
            var message = try retainedFrame(M.busName, try encodeBusPayload(message), headers, .json, retainFor: M.busRetainFor)
            if message == nil { return }  // no subscriber and no retaining broker or keeper
            switch core.queue(message: &message, name: M.busName) {
            case .queued: return
            case .closed: throw .closed
            case .full: throw .outboundQueueFull(capacity: core.outboundCapacity)
            }
        }
        // Looped back: the value travels to this bus's own typed subscriptions as it is.
        let looped = deliversToItself
        var encoded: ZeroMQ.Message? =
            looped ? try localFrame(message, M.busName, headers) : try encodeMessageForPost(message, M.busName, headers)
        let local = looped ? LocalMessage(message, core: core) : nil
        if encoded == nil { return }  // no subscriber wants it (counted in `stats.unwanted`)
        switch core.queue(message: &encoded, name: M.busName, localValue: local) {
        case .queued: return
        case .closed: throw .closed
        case .full: throw .outboundQueueFull(capacity: core.outboundCapacity)
        }
    }

    private func claimBridge<M: BusMessage>(_ type: M.Type, _ direction: BridgeRegistry.Direction) throws(BusError) {
        guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
        guard core.messageCoding.claimBridge(ObjectIdentifier(M.self), direction) else {
            throw .invalidConfiguration(
                "\(M.self) is an async message forwarded both ways on one bus: what the bridge posts into the center would echo back onto the bus; bridge one way, or make it a BusMainActorMessage")
        }
    }
}

extension MessageCodingCounters {
    /// Registers an async type's bridge in one direction; false when the other is there.
    func claimBridge(_ type: ObjectIdentifier, _ direction: BridgeRegistry.Direction) -> Bool {
        let opposite: BridgeRegistry.Direction = direction == .intoCenter ? .fromCenter : .intoCenter
        return bridges.withLock { registry in
            if registry.async[.init(type: type, direction: opposite), default: 0] > 0 { return false }
            registry.async[.init(type: type, direction: direction), default: 0] += 1
            return true
        }
    }

    func releaseBridge(_ type: ObjectIdentifier, _ direction: BridgeRegistry.Direction) {
        bridges.withLock { registry in
            let key = BridgeRegistry.BridgeKey(type: type, direction: direction)
            let left = registry.async[key, default: 1] - 1
            registry.async[key] = left > 0 ? left : nil
        }
    }
}
