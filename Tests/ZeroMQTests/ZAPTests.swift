import Foundation
import Synchronization
import Testing
import ZeroMQ
import TestSupport

/// A ZAP handler on its own thread (which owns its REP socket): admits `allowed` keys, records
/// every request, and stops when the context shuts down.
final class TestZAPHandler: Sendable {
    let requests = Mutex<[ZAPRequest]>([])
    private let finished = DispatchSemaphore(value: 0)

    init(context: Context, allowed: Set<String>) throws {
        let bound = DispatchSemaphore(value: 0)
        let failure = Mutex<ZMQError?>(nil)
        let thread = Thread { [self] in
            defer { self.finished.signal() }
            let socket: Socket
            do throws(ZMQError) {
                socket = try context.socket(.rep)
                try socket.set(.linger, .zero)
                try socket.bind(ZAPRequest.handlerEndpoint)
            } catch {
                failure.withLock { $0 = error }
                bound.signal()
                return
            }
            bound.signal()
            while let frames = try? socket.receiveMultipart() {
                guard let request = ZAPRequest(frames: frames) else { continue }
                self.requests.withLock { $0.append(request) }
                let admitted = request.curvePublicKey.map(allowed.contains) ?? false
                let reply = request.reply(admitted ? .success : .failure, text: admitted ? "OK" : "not listed")
                _ = try? socket.send(multipart: reply.frames)
            }
            socket.close()
        }
        thread.start()
        bound.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Shuts the context down (ending the handler's receive) and waits for the thread to close its socket.
    func stop(_ context: Context) {
        context.shutdown()
        finished.wait()
    }
}

extension Socket {
    /// Reads monitor events (bounded by the receive timeout) until one has `failure`.
    func awaitHandshakeFailure(_ failure: HandshakeFailure) throws -> SocketEvent {
        while true {
            if let event = SocketEvent(frames: try receiveMultipart()), event.handshakeFailure == failure {
                return event
            }
        }
    }
}

@Suite("ZAP authentication and socket monitor events over real CURVE handshakes", .timeLimit(.minutes(1)))
struct ZAPTests {
    @Test("A listed key is admitted, an unlisted one refused (400), a plaintext or wrong-server-key peer fails")
    func handshakes() throws {
        let context = try Context()
        let serverKeys = try CurveKeyPair.generate()
        let listed = try CurveKeyPair.generate()
        let unlisted = try CurveKeyPair.generate()
        let handler = try TestZAPHandler(context: context, allowed: [listed.publicKey])
        defer { handler.stop(context) }

        let server = try context.socket(.xpub)
        try server.set(.linger, .zero)
        try server.set(.receiveTimeout, .milliseconds(10_000))
        try server.set(.curveServer, true)
        try server.set(.curveSecretKey, try Z85.decode(serverKeys.secretKey))
        try server.set(.zapDomain, "test")
        try server.monitor("inproc://zap-test-server-monitor", events: .handshakeFailures)
        let serverEvents = try context.socket(.pair)
        try serverEvents.set(.receiveTimeout, .milliseconds(10_000))
        try serverEvents.set(.receiveHighWaterMark, 0)
        try serverEvents.connect("inproc://zap-test-server-monitor")
        let endpoint = try server.bindResolved(try temporaryIPCEndpoint())

        func client(_ keys: CurveKeyPair?, serverKey: String, monitor: String) throws -> (Socket, Socket) {
            let socket = try context.socket(.sub)
            try socket.set(.linger, .zero)
            try socket.set(.receiveTimeout, .milliseconds(10_000))
            if let keys {
                try socket.set(.curveServerKey, try Z85.decode(serverKey))
                try socket.set(.curvePublicKey, try Z85.decode(keys.publicKey))
                try socket.set(.curveSecretKey, try Z85.decode(keys.secretKey))
            }
            try socket.monitor(monitor, events: .handshakeFailures)
            let events = try context.socket(.pair)
            try events.set(.receiveTimeout, .milliseconds(10_000))
            try events.set(.receiveHighWaterMark, 0)
            try events.connect(monitor)
            try socket.connect(endpoint)
            try socket.subscribe(Array("t".utf8))
            return (socket, events)
        }

        // Listed: its subscription reaches the server and data flows back, encrypted.
        let (good, goodEvents) = try client(listed, serverKey: serverKeys.publicKey, monitor: "inproc://zap-test-good")
        try server.awaitSubscription(Array("t".utf8))
        try server.send("t.secret")
        #expect(try good.receiveString() == "t.secret")
        let goodRequest = try #require(handler.requests.withLock { $0.first })
        #expect(goodRequest.version == "1.0" && goodRequest.domain == "test" && goodRequest.mechanism == "CURVE")
        #expect(goodRequest.curvePublicKey == listed.publicKey)

        // Unlisted: the client's monitor reports the refusal with ZAP's status code.
        let (unlistedClient, unlistedEvents) = try client(unlisted, serverKey: serverKeys.publicKey, monitor: "inproc://zap-test-bad")
        _ = try unlistedEvents.awaitHandshakeFailure(.refused(status: 400))
        #expect(handler.requests.withLock { $0.contains { $0.curvePublicKey == unlisted.publicKey } })

        // Plaintext: refused by the mechanism itself, before ZAP is asked.
        let before = handler.requests.withLock { $0.count }
        let (plaintextClient, plaintextEvents) = try client(nil, serverKey: serverKeys.publicKey, monitor: "inproc://zap-test-plain")
        _ = try serverEvents.awaitHandshakeFailure(.mechanismMismatch)

        // A client that trusts the wrong server key cannot even say hello.
        let (wrongKeyClient, wrongKeyEvents) = try client(listed, serverKey: unlisted.publicKey, monitor: "inproc://zap-test-wrong")
        _ = try serverEvents.awaitHandshakeFailure(.cryptographic)
        // Neither the plaintext nor the wrong-key client got as far as asking ZAP with a key.
        #expect(handler.requests.withLock { $0.dropFirst(before).allSatisfy { $0.curvePublicKey == unlisted.publicKey } })
        // The clients and their monitor readers stay open until here: libzmq blocks its I/O thread on
        // a monitor whose reader has gone, so a reader must outlive (or stop) its monitor.
        withExtendedLifetime((good, goodEvents, unlistedClient, plaintextClient, plaintextEvents)) {}
        withExtendedLifetime((wrongKeyClient, wrongKeyEvents)) {}
    }

    @Test("ZAP requests parse from their frames and replies carry the request id back")
    func zapCodec() throws {
        let key = try CurveKeyPair.generate()
        let frames: [[UInt8]] = [
            Array("1.0".utf8), [7, 7], Array("publishers".utf8), Array("127.0.0.1".utf8), [], Array("CURVE".utf8),
            try Z85.decode(key.publicKey),
        ]
        let request = try #require(ZAPRequest(frames: frames))
        #expect(request.curvePublicKey == key.publicKey && request.domain == "publishers" && request.address == "127.0.0.1")
        #expect(
            request.reply(.failure, text: "no", userID: "u").frames
                == [Array("1.0".utf8), [7, 7], Array("400".utf8), Array("no".utf8), Array("u".utf8), []])
        #expect(ZAPRequest(frames: Array(frames.prefix(5))) == nil)
        let plain = try #require(ZAPRequest(frames: Array(frames.prefix(6)) + [Array("user".utf8), Array("pw".utf8)]))
        #expect(plain.curvePublicKey == nil)
    }
}
