import NotificationBus
import TestSupport
import Testing

// Issue 42, item 5 and retained values: the clear of a retained value (a retained post with an
// empty payload) reaching a typed consumer is not a message and not undecodable. The events form
// yields it as `.cleared`; the values forms and the typed observers skip it, uncounted.

private struct ClearedPrice: BusAsyncMessage, Equatable {
    static let busName: NotificationName = "typedclear.price"
    static let busRetained = true
    var cents: Int
}

@Suite("A retained value's clear reaching typed consumers", .timeLimit(.minutes(1)))
struct TypedRetainedClearTests {
    @Test("Through a broker over tcp: the events form yields .cleared; the values form skips it; none is undecodable")
    func throughBroker() async throws {
        var configuration = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        configuration.retainedNames = 10
        let broker = try Broker(configuration)
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let subscriber = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let events = try subscriber.messageEvents(of: ClearedPrice.self)
        let values = try subscriber.messages(of: ClearedPrice.self)
        try await subscriber.ready(events.pattern)
        try await subscriber.ready(values.pattern)
        try await publisher.waitForSubscribers(count: 1, matching: ClearedPrice.busName)
        try await publisher.post(ClearedPrice(cents: 100))
        try await publisher.clearRetained(name: ClearedPrice.busName)
        try await publisher.post(ClearedPrice(cents: 101))

        let seen = await events.first(3)
        let kinds = seen.map { event -> String in
            switch event {
            case .message(let envelope): "m\(envelope.message.cents)"
            case .cleared(let notification): notification.name == ClearedPrice.busName ? "cleared" : "?"
            case .undecodable(_, let error): "u \(error)"
            case .gap: "gap"
            }
        }
        #expect(kinds == ["m100", "cleared", "m101"])
        #expect(events.stats.undecodable == 0)
        #expect(await values.first(2) == [ClearedPrice(cents: 100), ClearedPrice(cents: 101)])
        #expect(values.stats.undecodable == 0)

        // A subscription made after the clear and the last post starts from that post's value.
        let later = try subscriber.messageEnvelopes(of: ClearedPrice.self)
        try await subscriber.ready(later.pattern)
        let first = try #require(await later.first(1).first)
        #expect(first.message == ClearedPrice(cents: 101) && first.isRetained)
        await publisher.close()
        await subscriber.close()
        await broker.stop()
    }

    @Test("An embedded bus: a typed observer skips the clear without counting it undecodable")
    func observerSkipsClear() async throws {
        let bus = try Bus(.embedded())
        let got = Watched<[Int]>([])
        let token = try bus.addObserver(for: ClearedPrice.self) { price in got.update { $0.append(price.cents) } }
        try await bus.ready(token.pattern)
        try await bus.post(ClearedPrice(cents: 7))
        try await bus.clearRetained(name: ClearedPrice.busName)
        try await bus.post(ClearedPrice(cents: 8))
        #expect(await got.wait(until: { $0.count == 2 }))
        #expect(got.value == [7, 8])
        // The clear was delivered (3 notifications) and is neither a message nor undecodable.
        #expect(token.stats.delivered == 3 && token.stats.undecodable == 0, "\(token.stats)")
        token.cancel()
        await bus.close()
    }
}
