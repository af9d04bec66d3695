import Synchronization
import Testing

@testable import NotificationBus

// The bus's own protocol with two brokers (NBP-1 §17), in one process over tcp on 127.0.0.1:
// subscribers counted once however many brokers bring them, readiness, request/reply answered
// once and the reply delivered once, and a broker stopped in the middle costing nothing.
@Suite("Two brokers, in one process", .serialized, .timeLimit(.minutes(1)))
struct RedundantBrokersLibraryTests {
    /// Two brokers on free tcp ports.
    func twoBrokers() throws -> [Broker] {
        try (0..<2).map { _ in try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*") }
    }

    /// A bus that publishes and subscribes through every broker of `brokers`.
    func bus(through brokers: [Broker]) throws -> Bus {
        try Bus(.brokered(frontends: brokers.map(\.frontendEndpoint), backends: brokers.map(\.backendEndpoint)))
    }

    @Test("a subscriber reached through both brokers counts once; two count two, never four")
    func subscribersCountedOnce() async throws {
        let brokers = try twoBrokers()
        let publisher = try bus(through: brokers)
        let subscribers = try (0..<2).map { _ in try bus(through: brokers) }
        let name = NotificationName("ha.count")
        let streams = try subscribers.map { try $0.notifications(named: NamePattern(exactly: name)) }
        for subscriber in subscribers { try await subscriber.ready(NamePattern(exactly: name)) }
        try await publisher.waitForSubscribers(count: 2, matching: name)
        // Four presences arrive (two per broker) but only two buses: three is never reached.
        await #expect(throws: BusError.self) {
            try await publisher.waitForSubscribers(count: 3, matching: name, timeout: .milliseconds(300))
        }
        try await publisher.post(name: name, payload: Array("once".utf8))
        for stream in streams {
            var iterator = stream.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first?.payload == Array("once".utf8))
        }
        _ = await publisher.close()
        for subscriber in subscribers {
            let stats = await subscriber.close()
            #expect(stats.duplicatesDiscarded >= 1, "the second broker's copy was not seen: \(stats)")
        }
        for broker in brokers { await broker.stop() }
    }

    @Test("requests through two brokers: each answered once, each reply delivered once, also after one broker stops")
    func requestReplyOnce() async throws {
        let brokers = try twoBrokers()
        let responder = try bus(through: brokers)
        let requester = try bus(through: brokers)
        let handled = Atomic<Int>(0)
        let service = NotificationName("ha.echo")
        let token = try responder.respond(to: NamePattern(exactly: service)) { (request: BusNotification) async -> [UInt8] in
            handled.add(1, ordering: .relaxed)
            return request.payload
        }
        try await responder.ready(NamePattern(exactly: service))
        for index in 0..<20 {
            let reply = try await requester.request(service, payload: Array("r\(index)".utf8), timeout: .seconds(10))
            #expect(reply.payload == Array("r\(index)".utf8))
        }
        // One broker goes: the rest still goes through the other.
        await brokers[0].stop()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 20..<40 {
                group.addTask {
                    let reply = try await requester.request(service, payload: Array("r\(index)".utf8), timeout: .seconds(10))
                    #expect(reply.payload == Array("r\(index)".utf8))
                }
            }
            try await group.waitForAll()
        }
        #expect(handled.load(ordering: .relaxed) == 40, "a request was handled twice (or not at all)")
        token.cancel()
        let requesterStats = await requester.close()
        _ = await responder.close()
        // A reply's second copy finds its subscription gone (counted as unmatched, or filtered at
        // the broker): never a second delivery; and nothing is lost.
        #expect(requesterStats.lostUpstream == 0, "\(requesterStats)")
        await brokers[1].stop()
    }

    @Test("a requester started while one of two brokers is down reaches the responder: one broker is enough to answer")
    func requestWithOneBrokerDown() async throws {
        let brokers = try twoBrokers()
        let responder = try bus(through: brokers)
        let service = NotificationName("ha.down")
        let token = try responder.respond(to: NamePattern(exactly: service)) { (request: BusNotification) async -> [UInt8] in
            request.payload
        }
        try await responder.ready(NamePattern(exactly: service))
        await brokers[0].stop()
        // A new requester hears of the responder through the live broker only. A wait that counts a
        // subscriber once it came through every broker (as a stream's start does) made every
        // request fail at once with "no responders" here.
        let requester = try bus(through: brokers)
        for index in 0..<5 {
            let reply = try await requester.request(service, payload: Array("d\(index)".utf8), timeout: .seconds(10))
            #expect(reply.payload == Array("d\(index)".utf8))
        }
        token.cancel()
        _ = await requester.close()
        _ = await responder.close()
        await brokers[1].stop()
    }
}
