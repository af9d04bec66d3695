import Logging
import NBP1
import NotificationBus
import Synchronization
import Testing
import TestSupport
import ZeroMQ

/// A swift-log handler that keeps every line, for a test to await (a real `Logger`, not a mock).
struct KeptLines: LogHandler {
    struct Line: Sendable {
        let message: String
        let metadata: [String: String]
    }

    let lines: Watched<[Line]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).mapValues { "\($0)" }
        lines.update { $0.append(Line(message: "\(event.message)", metadata: fields)) }
    }

    static func logger() -> (Logger, Watched<[Line]>) {
        let lines = Watched<[Line]>([])
        return (Logger(label: "bus-test") { _ in KeptLines(lines: lines) }, lines)
    }
}

@Suite("A bus logs what it does on its own (BusConfiguration.logger)", .timeLimit(.minutes(1)))
struct BusLoggingTests {
    @Test("Connections made and lost, and rejected frames (once at once, the rest at close, with counts)")
    func connectionsAndRejections() async throws {
        let (logger, lines) = KeptLines.logger()
        let (raw, endpoint) = try rawPublisher()
        var configuration = BusConfiguration.directSubscriber(connect: [endpoint])
        configuration.logger = logger
        let subscriber = try Bus(configuration)
        let everything = try subscriber.notifications(named: NamePattern(">"))
        try raw.awaitSubscription([])
        #expect(await lines.wait { $0.contains { $0.message == "bus connected" && $0.metadata["endpoint"] == endpoint } })

        // Three frames that break NBP/1 (no name terminator), then a good one as a fence.
        for _ in 0..<3 { try raw.send(Array("no terminator".utf8)) }
        try raw.send(try EnvelopeCodec.encode(BusNotification(name: NotificationName("fence.n"), sequence: 1, publisherID: 7, timestamp: 1)))
        #expect(await everything.first(1).first?.name.rawValue == "fence.n")

        raw.close()
        #expect(await lines.wait { $0.contains { $0.message == "bus lost a connection; libzmq reconnects" } })
        await subscriber.close()
        #expect(subscriber.stats.rejectedTotal == 3)  // final once closed
        let rejections = lines.value.filter { $0.message == "bus rejected frames that break NBP/1" }
        // Logged at once, what followed within 10 s at close: every one counted, none twice.
        #expect(!rejections.isEmpty && rejections.count <= 2)
        #expect(rejections.compactMap { $0.metadata["rejected"].flatMap { UInt64($0) } }.reduce(0, +) == 3)
        #expect(rejections.last?.metadata["total"] == "3")
        #expect(rejections.last?.metadata["reason.\(RejectionReason.missingNameTerminator)"] == "3")
    }

    @Test("A binding bus logs the connections it accepts and loses, with how many it holds")
    func acceptedConnections() async throws {
        let (logger, lines) = KeptLines.logger()
        var configuration = BusConfiguration.directPublisher(bind: try temporaryIPCEndpoint())
        configuration.logger = logger
        let publisher = try Bus(configuration)
        let endpoint = try #require(publisher.endpoints.first)
        let name: NotificationName = "log.accepted"

        let first = try Bus(.directSubscriber(connect: [endpoint]))
        // Kept: a sequence that is dropped ends its subscription.
        let firstSubscription = try first.notifications(named: NamePattern(exactly: name))
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: standardWait)
        #expect(await lines.wait { $0.contains { $0.message == "bus accepted a connection" && $0.metadata["open"] == "1" } })
        let accepted = try #require(lines.value.first { $0.message == "bus accepted a connection" })
        #expect(accepted.metadata["endpoint"] == endpoint && accepted.metadata["side"] == "publisher")

        let second = try Bus(.directSubscriber(connect: [endpoint]))
        let secondSubscription = try second.notifications(named: NamePattern(exactly: name))
        try await publisher.waitForSubscribers(count: 2, matching: name, timeout: standardWait)
        #expect(await lines.wait { $0.contains { $0.message == "bus accepted a connection" && $0.metadata["open"] == "2" } })

        await first.close()
        await second.close()
        #expect(await lines.wait { $0.contains { $0.message == "a connection to the bus ended" && $0.metadata["open"] == "0" } })
        withExtendedLifetime((firstSubscription, secondSubscription)) {}
        await publisher.close()
    }

    @Test("Failed handshakes: logged at once, repeats held back and counted")
    func handshakeFailures() async throws {
        let (logger, lines) = KeptLines.logger()
        // A plaintext socket where the bus expects a CURVE server: every handshake fails.
        let plaintext = try Context().socket(.xpub)
        let endpoint = try temporaryIPCEndpoint()
        try plaintext.bind(endpoint)
        var configuration = BusConfiguration(subscribe: [.connect(endpoint)])
        configuration.curve = try CurveClientSecurity(
            keyPair: try CurveKeyPair.generate(), serverPublicKey: try CurveKeyPair.generate().publicKey)
        configuration.logger = logger
        let subscriber = try Bus(configuration)
        _ = try subscriber.events(named: NamePattern("x.>"))
        try await subscriber.waitForHandshakeRefusal(timeout: .seconds(20))
        #expect(await lines.wait { $0.contains { $0.message == "bus handshake failed" } })
        await subscriber.close()
        let logged = lines.value.filter { $0.message == "bus handshake failed" }
        let counted = logged.compactMap { $0.metadata["failures"].flatMap { UInt64($0) } }.reduce(0, +)
        // Every failure the bus counted is in the log, in at most a line per 10 s and one at close.
        #expect(counted == subscriber.stats.handshakesFailed && logged.count <= 3, "\(logged.map(\.metadata))")
        plaintext.close()
    }

    @Test("Without a logger, or above debug, nothing is logged")
    func quietByDefault() async throws {
        let (logger, lines) = KeptLines.logger()
        var quiet = logger
        quiet.logLevel = .info
        let (raw, endpoint) = try rawPublisher()
        var configuration = BusConfiguration.directSubscriber(connect: [endpoint])
        configuration.logger = quiet
        let subscriber = try Bus(configuration)
        let everything = try subscriber.notifications(named: NamePattern(">"))
        try raw.awaitSubscription([])
        try raw.send(Array("no terminator".utf8))
        try raw.send(try EnvelopeCodec.encode(BusNotification(name: NotificationName("fence.n"), sequence: 1, publisherID: 7, timestamp: 1)))
        #expect(await everything.first(1).first?.name.rawValue == "fence.n")
        await subscriber.close()
        #expect(subscriber.stats.rejectedTotal == 1)
        #expect(lines.value.isEmpty)
        raw.close()
    }
}

@Suite("A Broker's lifetime", .timeLimit(.minutes(1)))
struct BrokerLifetimeTests {
    @Test("A Broker dropped without stop() stops: its connected subscriber sees the connection go")
    func droppedBrokerStops() async throws {
        let (logger, lines) = KeptLines.logger()
        var broker: Broker? = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let backend = try #require(broker?.backendEndpoint)
        var configuration = BusConfiguration(subscribe: [.connect(backend)])
        configuration.logger = logger
        let subscriber = try Bus(configuration)
        _ = try subscriber.events(named: NamePattern("x.>"))
        #expect(await lines.wait { $0.contains { $0.message == "bus connected" } })
        broker = nil  // no stop(): deinit asks the forwarding thread to end, and it closes the sockets
        #expect(await lines.wait { $0.contains { $0.message == "bus lost a connection; libzmq reconnects" } })
        await subscriber.close()
    }

    @Test("Opening a Broker on an endpoint in use fails at once with the endpoint named, leaving nothing running")
    func openingFailsCleanly() async throws {
        let first = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        #expect {
            _ = try Broker(frontend: first.frontendEndpoint, backend: "tcp://127.0.0.1:*")
        } throws: { error in
            "\(error)".contains("Address already in use") && "\(error)".contains(first.frontendEndpoint)
        }
        await first.stop()
    }
}

@Suite("A Broker's low-latency setting", .timeLimit(.minutes(1)))
struct BrokerIdleSpinTests {
    @Test("With idleSpin the broker forwards as without it, and an out-of-range spin is refused")
    func idleSpinForwards() async throws {
        #expect(throws: BusError.invalidConfiguration("idleSpin must be zero to 10 seconds, not \(Duration.seconds(11))")) {
            var configuration = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
            configuration.idleSpin = .seconds(11)
            _ = try Broker(configuration)
        }
        let lowLatency = BrokerConfiguration.lowLatency(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        #expect(lowLatency.idleSpin == .microseconds(200))
        let broker = try Broker(lowLatency)
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let subscriber = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let stream = try subscriber.notifications(named: "spin.>")
        try await subscriber.ready("spin.>")
        for _ in 0..<3 { try await publisher.post(name: "spin.n") }
        #expect(await stream.first(3).map(\.sequence) == [1, 2, 3])
        await publisher.close()
        await subscriber.close()
        #expect(await broker.stop().fromPublishers >= 3)
    }
}
