import Testing
import ZeroMQ

@Suite("Typed socket options")
struct SocketOptionTests {
    @Test("Integer options read back what was set")
    func integerOptionsRoundTrip() throws {
        let context = try Context()
        let socket = try context.socket(.dealer)
        let cases: [(SocketOption<Int32>, Int32)] = [
            (.sendHighWaterMark, 1234), (.receiveHighWaterMark, 4321), (.linger, 250),
            (.receiveTimeout, 750), (.sendTimeout, 650), (.reconnectInterval, 40),
            (.reconnectIntervalMax, 2_000), (.tcpKeepalive, 1), (.tcpKeepaliveIdle, 30),
            (.tcpKeepaliveInterval, 5), (.tcpKeepaliveCount, 3),
        ]
        for (option, value) in cases {
            try socket.set(option, value)
            #expect(try socket.get(option) == value, "\(option)")
        }
        #expect(try socket.get(.type) == SocketType.dealer.rawValue)
    }

    @Test("Byte and string options read back what was set")
    func bytesAndStringsRoundTrip() throws {
        let context = try Context()
        let socket = try context.socket(.dealer)
        try socket.set(.routingID, Array("worker-7".utf8))
        #expect(try socket.get(.routingID) == Array("worker-7".utf8))
        try socket.set(.zapDomain, "global")
        #expect(try socket.get(.zapDomain) == "global")
    }

    @Test(
        "CURVE options accept generated keys and read them back",
        .enabled(if: LibZMQ.has("curve"), "libzmq was built without CURVE"))
    func curveOptions() throws {
        let context = try Context()
        let server = try context.socket(.xpub)
        let keys = try CurveKeyPair.generate()
        try server.set(.curveServer, true)
        try server.set(.curveSecretKey, try Z85.decode(keys.secretKey))
        try server.set(.curvePublicKey, try Z85.decode(keys.publicKey))
        #expect(try server.get(.curveServer) == true)
        #expect(try server.get(.curvePublicKey) == (try Z85.decode(keys.publicKey)))
        #expect(try server.get(.curveSecretKey) == (try Z85.decode(keys.secretKey)))
    }

    @Test("Write-only options can be set")
    func writeOnlyOptions() throws {
        let context = try Context()
        let xpub = try context.socket(.xpub)
        try xpub.set(.xpubVerbose, true)
        try xpub.set(.xpubNoDrop, true)
        try xpub.set(.immediate, true)
        let sub = try context.socket(.sub)
        try sub.set(.conflate, true)
        try sub.subscribe(Array("a".utf8))
        try sub.unsubscribe(Array("a".utf8))
    }

    @Test("An option the socket type does not support is a typed error")
    func unsupportedOptionIsTypedError() throws {
        let context = try Context()
        let pub = try context.socket(.pub)
        do {
            try pub.set(.subscribe, [])
            Issue.record("SUBSCRIBE on PUB was accepted")
        } catch {
            #expect(error.kind == .invalidArgument)
        }
    }
}
