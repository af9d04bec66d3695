import Foundation
import Testing
@testable import NotificationBus

@Suite("Broker restart, in one process", .serialized, .timeLimit(.minutes(1)))
struct BrokerRestartTests {
    /// Starts a broker on `frontend` and `backend`, stops it, and lets its context go, so its
    /// listeners are closed when this returns (the caller can bind the same ports again).
    private func runFirstBroker(
        _ body: (_ frontend: String, _ backend: String) async throws -> Void
    ) async throws -> (frontend: String, backend: String) {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let endpoints = (broker.frontendEndpoint, broker.backendEndpoint)
        try await body(endpoints.0, endpoints.1)
        await broker.stop()
        return endpoints
    }

    @Test("A brokered publisher forgets a stopped broker's subscribers, relearns them from its replacement, and the outage is one exact gap")
    func publisherRelearnsSubscribersAfterBrokerRestart() async throws {
        let name = NotificationName("restart.tick")
        let pattern = NamePattern("restart.>")
        var publisherConfiguration = BusConfiguration()
        var subscriberConfiguration = BusConfiguration()
        var publisher: Bus?
        var subscriber: Bus?
        var events: BusEventSequence?
        var iterator: BusEventSequence.AsyncIterator?

        let (frontend, backend) = try await runFirstBroker { frontend, backend in
            publisherConfiguration.publish = [.connect(frontend)]
            subscriberConfiguration.subscribe = [.connect(backend)]
            publisher = try Bus(publisherConfiguration)
            subscriber = try Bus(subscriberConfiguration)
            events = try subscriber?.events(named: pattern)
            iterator = events?.makeAsyncIterator()
            try await publisher?.waitForSubscribers(count: 1, matching: name)
            for _ in 1...10 { try await publisher?.post(name: name) }
            for expected in UInt64(1)...10 {
                guard case .notification(let n)? = await iterator?.next() else {
                    Issue.record("notification \(expected) did not arrive before the restart")
                    return
                }
                #expect(n.sequence == expected)
            }
        }
        let publisherBus = try #require(publisher)
        let subscriberBus = try #require(subscriber)

        // The broker is gone: the publisher's view of its subscribers must empty (with libzmq's
        // default the connect pipe outlives the connection and keeps the stale subscriptions).
        try await publisherBus.waitForNoSubscribers(matching: name)
        // Posted during the outage: nobody to send them to; the subscriber counts them as a gap.
        for _ in 11...15 { try await publisherBus.post(name: name) }

        // Same ports again. Both sides reconnect by themselves; the subscriber's SUB replays its
        // subscriptions and the publisher learns them from the new broker.
        let broker = try Broker(frontend: frontend, backend: backend)
        try await publisherBus.waitForSubscribers(count: 1, matching: name)
        // The readiness token travels behind the replayed subscriptions: once it is echoed, the
        // publisher has applied the data subscription as well.
        try await subscriberBus.ready(pattern)
        for _ in 16...25 { try await publisherBus.post(name: name) }

        var received: [UInt64] = []
        var gaps: [Gap] = []
        reading: while UInt64(received.count) + gaps.reduce(0, { $0 + $1.count }) < 15 {
            switch await iterator?.next() {
            case .notification(let n)?: received.append(n.sequence)
            case .gap(let gap)?: gaps.append(gap)
            case nil: break reading
            }
        }
        #expect(gaps.map(\.sequences) == [11...15])
        #expect(gaps.map(\.count) == [5])
        #expect(received == Array(16...25))
        #expect(events?.stats.lostUpstream == 5)

        let publisherStats = await publisherBus.close()
        #expect(publisherStats.posted == 25 && publisherStats.unsent == 0)
        // Every subscriber the publisher knew of at close acknowledged its end of stream.
        #expect(publisherStats.endOfStreamUnacknowledged == 0)
        await subscriberBus.close()
        await broker.stop()
    }
}
