import Testing
import ZeroMQ
import TestSupport

@Suite("PUB/SUB over every transport")
struct PubSubTransportTests {
    enum Transport: String, CaseIterable, CustomTestStringConvertible {
        case inproc, ipc, tcp
        var testDescription: String { rawValue }

        func endpoint() throws -> String {
            switch self {
            case .inproc: return TestEndpoint.inproc()
            case .ipc: return try temporaryIPCEndpoint()
            case .tcp: return TestEndpoint.tcpAnyPort
            }
        }
    }

    @Test("XPUB publisher delivers every message after it has seen the subscription", arguments: Transport.allCases)
    func deliversAfterSubscriptionSeen(transport: Transport) throws {
        let context = try Context()
        let publisher = try context.socket(.xpub)
        try publisher.set(.receiveTimeout, .milliseconds(5_000))
        let endpoint = try publisher.bindResolved(try transport.endpoint())

        let subscriber = try context.socket(.sub)
        try subscriber.set(.receiveTimeout, .milliseconds(5_000))
        try subscriber.connect(endpoint)
        try subscriber.subscribe(Array("orders.".utf8))

        // The real readiness signal: the subscription has reached the publisher.
        try publisher.awaitSubscription(Array("orders.".utf8))

        for index in 0..<100 {
            try publisher.send("audit.\(index)")
            try publisher.send("orders.\(index)")
        }
        for index in 0..<100 {
            #expect(try subscriber.receiveString() == "orders.\(index)")
        }
        #expect(throws: ZMQError.self) { try subscriber.receive(mode: .dontWait) }
    }

    @Test("A plain PUB socket reaches a SUB once the subscription propagates", arguments: Transport.allCases)
    func plainPubReachesSub(transport: Transport) throws {
        let context = try Context()
        let publisher = try context.socket(.pub)
        let endpoint = try publisher.bindResolved(try transport.endpoint())
        let subscriber = try context.socket(.sub)
        try subscriber.connect(endpoint)
        try subscriber.subscribe([])

        // PUB cannot see subscriptions, so probe until the first probe arrives (bounded: 500 x 10 ms).
        #expect(try publisher.sendUntilReadable("probe", at: subscriber))
        while (try? subscriber.receive(mode: .dontWait)) != nil {}

        try publisher.send("payload")
        try subscriber.set(.receiveTimeout, .milliseconds(5_000))
        #expect(try subscriber.receiveString() == "payload")
    }

    @Test("A SUB socket filters by byte prefix")
    func subFiltersByPrefix() throws {
        let context = try Context()
        let publisher = try context.socket(.xpub)
        try publisher.set(.receiveTimeout, .milliseconds(5_000))
        let endpoint = try publisher.bindResolved(TestEndpoint.inproc())
        let subscriber = try context.socket(.sub)
        try subscriber.set(.receiveTimeout, .milliseconds(5_000))
        try subscriber.connect(endpoint)
        try subscriber.subscribe(Array("ab\0".utf8))
        try publisher.awaitSubscription(Array("ab\0".utf8))

        try publisher.send(Array("abc\0x".utf8))
        try publisher.send(Array("ab\0y".utf8))
        #expect(try subscriber.receive() == Array("ab\0y".utf8))
    }
}
