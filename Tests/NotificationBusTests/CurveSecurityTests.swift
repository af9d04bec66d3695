import Foundation
import Synchronization
import Testing
import ZeroMQ
@testable import NotificationBus
import TestSupport

/// The authentication events a broker (or a CURVE server bus) reported, awaitable with a bound.
final class AuthenticationLog: Sendable {
    private let log = EventLog<AuthenticationEvent>()

    var events: [AuthenticationEvent] { log.events }

    /// The callback to hand to the server.
    var record: @Sendable (AuthenticationEvent) -> Void { { [log] event in log.append(event) } }

    /// Suspends until `condition` holds for the events so far, or `timeout` passes (false).
    func wait(
        timeout: Duration = standardWait, until condition: @escaping @Sendable ([AuthenticationEvent]) -> Bool
    ) async -> Bool {
        await log.satisfies(within: timeout, condition)
    }

    /// Waits for a refusal of `key` on `domain`.
    func waitForRefusal(of key: String, _ domain: AuthenticationDomain) async -> Bool {
        await wait { events in
            events.contains { event in
                if case .refused = event.outcome { return event.domain == domain && event.publicKey == key }
                return false
            }
        }
    }

    /// Waits for a failed handshake on `domain` whose cause `matches`.
    func waitForFailedHandshake(
        _ domain: AuthenticationDomain, _ matches: @escaping @Sendable (HandshakeFailure) -> Bool
    ) async -> Bool {
        await wait { events in
            events.contains { event in
                guard event.domain == domain, case .handshakeFailed(let failure) = event.outcome else { return false }
                return matches(failure)
            }
        }
    }
}

/// A CURVE broker over ipc in a temp folder, with named key pairs and allow lists.
struct SecuredBroker {
    let broker: Broker
    let log = AuthenticationLog()
    let serverKeys: CurveKeyPair
    let alice: CurveKeyPair  // listed publisher
    let bob: CurveKeyPair  // listed subscriber
    let mallory: CurveKeyPair  // listed nowhere

    init() throws {
        serverKeys = try CurveKeyPair.generate()
        alice = try CurveKeyPair.generate()
        bob = try CurveKeyPair.generate()
        mallory = try CurveKeyPair.generate()
        let security = BrokerSecurity(
            keyPair: serverKeys, allowedPublishers: try CurveAllowList(keys: ["alice": alice.publicKey]),
            allowedSubscribers: try CurveAllowList(keys: ["bob": bob.publicKey]))
        var configuration = BrokerConfiguration(
            frontend: try temporaryIPCEndpoint("f.sock"), backend: try temporaryIPCEndpoint("b.sock"))
        configuration.security = security
        configuration.onAuthentication = log.record
        broker = try Broker(configuration)
    }

    func client(_ keys: CurveKeyPair?, publishing: Bool) throws -> Bus {
        var configuration = publishing
            ? BusConfiguration(publish: [.connect(broker.frontendEndpoint)])
            : BusConfiguration(subscribe: [.connect(broker.backendEndpoint)])
        if let keys { configuration.curve = try CurveClientSecurity(keyPair: keys, serverPublicKey: serverKeys.publicKey) }
        return try Bus(configuration)
    }
}

/// Receives `count` notifications from `events`, in order (bounded: fewer and an issue after 30 s).
func receive(
    _ count: Int, from events: BusEventSequence, sourceLocation: SourceLocation = #_sourceLocation
) async -> [BusNotification] {
    await Task {
        var received: [BusNotification] = []
        for await event in events {
            if case .notification(let notification) = event { received.append(notification) }
            if received.count == count { break }
        }
        return received
    }.value(within: .seconds(30), "\(count) notifications", sourceLocation: sourceLocation)
}

@Suite("CURVE: a broker that admits only allow-listed keys", .serialized, .timeLimit(.minutes(1)))
struct CurveSecurityTests {
    @Test("A listed publisher reaches a listed subscriber through a CURVE broker; both are counted as admitted")
    func listedKeysExchange() async throws {
        let setup = try SecuredBroker()
        let publisher = try setup.client(setup.alice, publishing: true)
        let subscriber = try setup.client(setup.bob, publishing: false)
        let events = try subscriber.events(named: NamePattern("x.>"))
        let name = NotificationName("x.listed")
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(20))
        for index in 1...100 { try await publisher.post(name: name, payload: Array("m\(index)".utf8)) }
        let received = await receive(100, from: events)
        #expect(received.map(\.sequence) == Array(1...100))
        #expect(received.map { String(decoding: $0.payload, as: UTF8.self) } == (1...100).map { "m\($0)" })
        await publisher.close()
        await subscriber.close()

        let stats = await setup.broker.stop()
        #expect(stats.publisherAuthentication.admitted >= 1 && stats.publisherAuthentication.refusedTotal == 0)
        #expect(stats.subscriberAuthentication.admitted >= 1 && stats.subscriberAuthentication.refusedTotal == 0)
        let admitted = setup.log.events.compactMap { event -> String? in
            if case .admitted(let name) = event.outcome { return "\(event.domain.rawValue):\(name)" }
            return nil
        }
        #expect(Set(admitted) == ["publishers:alice", "subscribers:bob"])
    }

    @Test("An unlisted publisher's notifications, posted first, never reach a listed subscriber; it is refused and counted")
    func unlistedPublisherIsRefused() async throws {
        let setup = try SecuredBroker()
        let subscriber = try setup.client(setup.bob, publishing: false)
        let events = try subscriber.events(named: NamePattern("x.>"))

        // A listed subscriber's key presented on the publishers' side is not a publisher key either.
        let intruder = try setup.client(setup.mallory, publishing: true)
        try await intruder.waitForHandshakeRefusal(timeout: .seconds(20))
        #expect(await setup.log.waitForRefusal(of: setup.mallory.publicKey, .publishers))
        for index in 1...50 { try await intruder.post(name: "x.intruder", payload: Array("bad\(index)".utf8)) }
        #expect(intruder.stats.handshakesRefused >= 1)
        #expect(intruder.stats.lastHandshakeFailure == .refused(status: 400))

        let publisher = try setup.client(setup.alice, publishing: true)
        let name = NotificationName("x.listed")
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(20))
        for index in 1...20 { try await publisher.post(name: name, payload: Array("good\(index)".utf8)) }
        let received = await receive(20, from: events)
        #expect(received.allSatisfy { $0.name == name && $0.publisherID == publisher.publisherID })
        #expect(received.map(\.sequence) == Array(1...20))
        await publisher.close()
        await intruder.close()
        await subscriber.close()
        // Everything the subscriber ever read: the listed publisher's 20 and its end-of-stream record.
        #expect(subscriber.stats.rejectedTotal == 0 && subscriber.stats.unmatched == 0)

        let stats = await setup.broker.stop()
        #expect(stats.publisherAuthentication.refusedKeys >= 1)
        #expect(stats.publisherAuthentication.admitted >= 1)
        let refusal = try #require(setup.log.events.first { $0.publicKey == setup.mallory.publicKey })
        #expect(refusal.description.contains("refused publisher key \(setup.mallory.publicKey)"))
        #expect(refusal.description.contains("not in the allow list"))
    }

    @Test("An unlisted subscriber is refused and never receives what a listed one does")
    func unlistedSubscriberIsRefused() async throws {
        let setup = try SecuredBroker()
        let listed = try setup.client(setup.bob, publishing: false)
        let listedEvents = try listed.events(named: NamePattern("x.>"))
        // The listed publisher's key, presented on the subscribers' side: not a subscriber key.
        let unlisted = try setup.client(setup.alice, publishing: false)
        let unlistedEvents = try unlisted.events(named: NamePattern("x.>"))
        try await unlisted.waitForHandshakeRefusal(timeout: .seconds(20))
        #expect(await setup.log.waitForRefusal(of: setup.alice.publicKey, .subscribers))

        let publisher = try setup.client(setup.alice, publishing: true)
        let name = NotificationName("x.data")
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(20))
        for index in 1...30 { try await publisher.post(name: name, payload: Array("d\(index)".utf8)) }
        #expect(await receive(30, from: listedEvents).map(\.sequence) == Array(1...30))
        // The listed subscriber has everything; the refused one has no connection to receive on.
        #expect(unlisted.stats.framesReceived == 0)
        #expect(unlistedEvents.stats.received == 0)
        await publisher.close()
        await listed.close()
        await unlisted.close()
        let stats = await setup.broker.stop()
        #expect(stats.subscriberAuthentication.refusedKeys >= 1)
    }

    @Test("Plaintext publishers and subscribers are refused by a CURVE broker, counted, and get nothing")
    func plaintextPeersAreRefused() async throws {
        let setup = try SecuredBroker()
        let plainSubscriber = try setup.client(nil, publishing: false)
        let plainEvents = try plainSubscriber.events(named: NamePattern("x.>"))
        let plainPublisher = try setup.client(nil, publishing: true)
        // The broker sees a mechanism mismatch, or the client hanging up on its CURVE greeting first.
        let plaintext: @Sendable (HandshakeFailure) -> Bool = { failure in
            if case .system = failure { return true }
            return failure == .mechanismMismatch
        }
        #expect(await setup.log.waitForFailedHandshake(.publishers, plaintext))
        #expect(await setup.log.waitForFailedHandshake(.subscribers, plaintext))
        try await plainPublisher.post(name: "x.plain", payload: Array("plain".utf8))

        let subscriber = try setup.client(setup.bob, publishing: false)
        let events = try subscriber.events(named: NamePattern("x.>"))
        let publisher = try setup.client(setup.alice, publishing: true)
        let name = NotificationName("x.secure")
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(20))
        for _ in 1...10 { try await publisher.post(name: name) }
        let received = await receive(10, from: events)
        #expect(received.allSatisfy { $0.name == name } && received.count == 10)
        #expect(plainSubscriber.stats.framesReceived == 0 && plainEvents.stats.received == 0)
        for bus in [publisher, subscriber, plainPublisher, plainSubscriber] { await bus.close() }
        let stats = await setup.broker.stop()
        #expect(stats.publisherAuthentication.failedHandshakes >= 1)
        #expect(stats.subscriberAuthentication.failedHandshakes >= 1)
    }

    @Test("A client with the wrong server key fails its handshake, and the broker counts it")
    func wrongServerKeyFails() async throws {
        let setup = try SecuredBroker()
        var configuration = BusConfiguration(subscribe: [.connect(setup.broker.backendEndpoint)])
        configuration.curve = try CurveClientSecurity(keyPair: setup.bob, serverPublicKey: setup.mallory.publicKey)
        let subscriber = try Bus(configuration)
        _ = try subscriber.events(named: NamePattern("x.>"))
        #expect(await setup.log.waitForFailedHandshake(.subscribers) { $0 == .cryptographic })
        await subscriber.close()
        let stats = await setup.broker.stop()
        #expect(stats.subscriberAuthentication.failedHandshakes >= 1)
        #expect(stats.subscriberAuthentication.admitted == 0)
    }

    @Test("Direct topology: a binding publisher admits only its listed subscribers")
    func directPublisherAdmitsListedSubscribers() async throws {
        let serverKeys = try CurveKeyPair.generate()
        let listedKeys = try CurveKeyPair.generate()
        let unlistedKeys = try CurveKeyPair.generate()
        let log = AuthenticationLog()
        var publisherConfiguration = BusConfiguration.directPublisher(bind: try temporaryIPCEndpoint())
        publisherConfiguration.curveServer = CurveServerSecurity(
            keyPair: serverKeys, allowedClients: try CurveAllowList(keys: ["listed": listedKeys.publicKey]),
            onAuthentication: log.record)
        let publisher = try Bus(publisherConfiguration)
        let endpoint = try #require(publisher.endpoints.first)

        func subscriber(_ keys: CurveKeyPair) throws -> Bus {
            var configuration = BusConfiguration.directSubscriber(connect: [endpoint])
            configuration.curve = try CurveClientSecurity(keyPair: keys, serverPublicKey: serverKeys.publicKey)
            return try Bus(configuration)
        }
        let unlisted = try subscriber(unlistedKeys)
        _ = try unlisted.events(named: NamePattern("d.>"))
        try await unlisted.waitForHandshakeRefusal(timeout: .seconds(20))
        #expect(await log.waitForRefusal(of: unlistedKeys.publicKey, .subscribers))

        let listed = try subscriber(listedKeys)
        let events = try listed.events(named: NamePattern("d.>"))
        let name = NotificationName("d.x")
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(20))
        for _ in 1...10 { try await publisher.post(name: name) }
        #expect(await receive(10, from: events).map(\.sequence) == Array(1...10))
        #expect(unlisted.stats.framesReceived == 0)
        let stats = publisher.stats.clientAuthentication
        #expect(stats.admitted >= 1 && stats.refusedKeys >= 1)
        for bus in [listed, unlisted, publisher] { await bus.close() }
    }

    @Test("A CURVE server bus logging at debug still reports failed handshakes (one monitor per socket)")
    func debugLoggingKeepsHandshakeFailures() async throws {
        let serverKeys = try CurveKeyPair.generate()
        let log = AuthenticationLog()
        var configuration = BusConfiguration.directPublisher(bind: try temporaryIPCEndpoint())
        configuration.curveServer = CurveServerSecurity(
            keyPair: serverKeys, allowedClients: try CurveAllowList(keys: [:]), onAuthentication: log.record)
        // A debug logger used to add an accept monitor that replaced the ZAP handler's.
        configuration.logger = KeptLines.logger().0
        let publisher = try Bus(configuration)
        let endpoint = try #require(publisher.endpoints.first)
        let plaintext = try Bus(.directSubscriber(connect: [endpoint]))
        _ = try plaintext.events(named: NamePattern("d.>"))
        let failed: @Sendable (HandshakeFailure) -> Bool = { failure in
            if case .system = failure { return true }
            return failure == .mechanismMismatch
        }
        #expect(await log.waitForFailedHandshake(.subscribers, failed))
        for bus in [plaintext, publisher] { await bus.close() }
    }

    @Test("A socket that both binds and connects cannot use CURVE: opening the bus says so")
    func mixedAttachmentsAreRefused() throws {
        var configuration = BusConfiguration(publish: [.bind(try temporaryIPCEndpoint()), .connect(try temporaryIPCEndpoint())])
        let keys = try CurveKeyPair.generate()
        configuration.curveServer = CurveServerSecurity(keyPair: keys, allowedClients: nil)
        #expect {
            _ = try Bus(configuration)
        } throws: { error in
            guard let error = error as? BusError, error.code == .security, let text = error.reason else { return false }
            return text.contains("both binds and connects")
        }
    }
}
