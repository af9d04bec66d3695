import Testing
import ZeroMQ

@Suite("Typed socket options")
struct SocketOptionTests {
    @Test("Integer options read back what was set")
    func integerOptionsRoundTrip() throws {
        let context = try Context()
        let socket = try context.socket(.dealer)
        let cases: [(SocketOption<Int32>, Int32)] = [
            (.sendHighWaterMark, 1234), (.receiveHighWaterMark, 4321), (.tcpKeepalive, 1), (.tcpKeepaliveIdle, 30),
            (.tcpKeepaliveInterval, 5), (.tcpKeepaliveCount, 3),
        ]
        for (option, value) in cases {
            try socket.set(option, value)
            #expect(try socket.get(option) == value, "\(option)")
        }
        #expect(try socket.get(.type) == SocketType.dealer.rawValue)
    }

    @Test("Time options are Durations: milliseconds on the wire, nil for libzmq's -1 (forever)")
    func timeOptionsRoundTrip() throws {
        let context = try Context()
        let socket = try context.socket(.dealer)
        let spans: [(SocketOption<Duration>, Duration)] = [
            (.reconnectIntervalMax, .seconds(2)),
            (.heartbeatInterval, .milliseconds(1_500)), (.heartbeatTimeout, .seconds(4)),
            (.tcpMaximumRetransmitTime, .seconds(20)),
        ]
        for (option, value) in spans {
            try socket.set(option, value)
            #expect(try socket.get(option) == value, "\(option)")
        }
        let forever: [(SocketOption<Duration?>, Duration?)] = [
            (.linger, .milliseconds(250)), (.receiveTimeout, .milliseconds(750)), (.sendTimeout, nil), (.linger, nil),
            (.reconnectInterval, .milliseconds(40)), (.reconnectInterval, nil),
        ]
        for (option, value) in forever {
            try socket.set(option, value)
            #expect(try socket.get(option) == value, "\(option)")
        }
        // A positive span under a millisecond is 1 ms, never 0 ("do not wait"); the raw value shows it.
        try socket.set(.receiveTimeout, .microseconds(10))
        #expect(try socket.get(SocketOption<Int32>(rawValue: 27, name: "ZMQ_RCVTIMEO")) == 1)
        try socket.set(.linger, .zero)
        #expect(try socket.get(.linger) == .zero)
        try socket.set(.reconnectIntervalMax, .seconds(Int64.max))
        #expect(try socket.get(.reconnectIntervalMax) == .milliseconds(Int32.max))
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
