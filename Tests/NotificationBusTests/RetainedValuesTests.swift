import Foundation
import TestSupport
import Testing
@testable import NotificationBus

// Retained values (NBP-1 §18) through an in-process broker over real tcp sockets: a subscription
// made after the posts gets each name's current value once, marked, then the live stream with
// exact accounting; a subscriber that was there already gets nothing again; clear; eviction.

@Suite("Retained values through a broker", .serialized, .timeLimit(.minutes(1)))
struct RetainedValuesTests {
    private func broker(names: Int = 100) throws -> Broker {
        var configuration = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        configuration.retainedNames = names
        return try Broker(configuration)
    }

    /// Waits (bounded) until the broker's counters satisfy `condition`: the broker's own report
    /// of what it kept, polled, since nothing else says when a frame reached it.
    private func waitForBroker(
        _ broker: Broker, sourceLocation: SourceLocation = #_sourceLocation, _ condition: (BrokerStatistics) -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            if condition(await broker.statistics()) { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        let last = await broker.statistics()
        Issue.record("the broker's counters never got there: \(last)", sourceLocation: sourceLocation)
    }

    @Test("a later subscription gets each name's current value once, marked, then live ones with no gap; an earlier one gets nothing again")
    func laterSubscriptionGetsCurrentValues() async throws {
        let broker = try broker()
        let publisher = try Bus(BusConfiguration(publish: [.connect(broker.frontendEndpoint)]))
        let earlier = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let earlierEvents = try earlier.events(named: "p.>")
        try await earlier.ready("p.>")
        try await publisher.waitForSubscribers(count: 1, matching: "p.a")
        for value in 1...5 { try await publisher.post(name: "p.a", payload: Array("\(value)".utf8), retain: true) }
        try await publisher.post(name: "p.b", payload: Array("b".utf8), retain: true)
        try await waitForBroker(broker) { $0.retainedNames == 2 && $0.notificationsFromPublishers >= 6 }

        let later = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let laterEvents = try later.events(named: "p.>", retained: true)
        // No publisher echo is needed: the snapshot says the broker takes every publisher's posts.
        try await later.ready("p.>")
        try await publisher.post(name: "p.a", payload: Array("6".utf8))
        let received = await laterEvents.collect { event in
            if case .notification(let n) = event { return n.sequence == 6 }
            return true
        }
        let notifications = received.compactMap { event -> BusNotification? in
            if case .notification(let n) = event { return n }
            return nil
        }
        #expect(notifications.map(\.name.rawValue) == ["p.a", "p.b", "p.a"])
        #expect(notifications.map(\.sequence) == [5, 1, 6])
        #expect(notifications.map(\.isRetained) == [true, true, false])
        #expect(notifications.map { String(decoding: $0.payload, as: UTF8.self) } == ["5", "b", "6"])
        // The counters as the closed bus reports them: `stats` is published after each round.
        let stats = await later.close()
        #expect(stats.lostUpstream == 0)
        #expect(stats.retainedReceived == 2)
        // p.a's history before its retained value is not owed to a subscription that just began.
        #expect(stats.streamsJoinedLate == 1)
        #expect(stats.notificationsBeforeJoining == 4)

        let earlierReceived = await earlierEvents.collect { event in
            if case .notification(let n) = event { return n.sequence == 6 }
            return true
        }
        #expect(earlierReceived.count == 7, "\(earlierReceived)")
        #expect(!earlierReceived.contains { event in
            if case .notification(let n) = event { return n.isRetained }
            return true
        })
        _ = await earlier.close()
        _ = await publisher.close()
        // The broker's final counters, not `statistics()`: those are as of the end of its last
        // round, and the round that sent the snapshot may forward the live post too before it
        // ends (see `twoRetainedSubscriptionsOnOneBus`).
        let brokerStats = await broker.stop()
        #expect(brokerStats.retainedSnapshots == 1, "\(brokerStats)")
        #expect(brokerStats.retainedNotificationsSent == 2, "\(brokerStats)")
    }

    @Test("a retained post with an empty payload clears the name: a later subscription gets nothing for it")
    func emptyRetainedPostClears() async throws {
        let broker = try broker()
        let publisher = try Bus(BusConfiguration(publish: [.connect(broker.frontendEndpoint)]))
        try await publisher.waitForSubscribers(count: 1, matching: "c.x")
        try await publisher.post(name: "c.x", payload: Array("kept".utf8), retain: true)
        try await publisher.post(name: "c.y", payload: Array("kept".utf8), retain: true)
        try await publisher.clearRetained(name: "c.x")
        try await waitForBroker(broker) { $0.retainedClears == 1 }
        let subscriber = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let events = try subscriber.events(named: "c.>", retained: true)
        try await subscriber.ready("c.>")
        try await publisher.post(name: "c.x", payload: Array("live".utf8))
        let received = await events.collect { event in
            if case .notification(let n) = event { return n.name.rawValue == "c.x" }
            return true
        }
        let texts = received.compactMap { event -> String? in
            if case .notification(let n) = event { return "\(n.name) \(String(decoding: n.payload, as: UTF8.self)) \(n.isRetained)" }
            return nil
        }
        #expect(texts == ["c.y kept true", "c.x live false"])
        #expect(await subscriber.close().lostUpstream == 0)
        _ = await publisher.close()
        _ = await broker.stop()
    }

    @Test("past the bound in names the value updated longest ago is evicted and counted")
    func evictionAtTheBound() async throws {
        let broker = try broker(names: 3)
        let publisher = try Bus(BusConfiguration(publish: [.connect(broker.frontendEndpoint)]))
        try await publisher.waitForSubscribers(count: 1, matching: "e.1")
        for index in 1...5 { try await publisher.post(name: "e.\(index)", payload: [UInt8(index)], retain: true) }
        try await waitForBroker(broker) { $0.retainedEvictions == 2 }
        let stats = await broker.statistics()
        #expect(stats.retainedNames == 3)
        let subscriber = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let events = try subscriber.events(named: "e.*", retained: true)
        try await subscriber.ready("e.*")
        let received = await events.first(3)
        let names = received.compactMap { event -> String? in
            if case .notification(let n) = event, n.isRetained { return n.name.rawValue }
            return nil
        }
        #expect(names == ["e.3", "e.4", "e.5"])
        #expect(await subscriber.close().retainedReceived == 3)
        _ = await publisher.close()
        _ = await broker.stop()
    }

    @Test("a value posted with retainFor is not handed out once that time passed; one without is")
    func expiredValueIsNotSent() async throws {
        let broker = try broker()
        let publisher = try Bus(BusConfiguration(publish: [.connect(broker.frontendEndpoint)]))
        try await publisher.waitForSubscribers(count: 1, matching: "x.short")
        try await publisher.post(name: "x.short", payload: [1], retain: true, retainFor: .milliseconds(20))
        try await publisher.post(name: "x.kept", payload: [2], retain: true)
        try await waitForBroker(broker) { $0.retainedNames == 2 }
        // The scenario's wait, not one for readiness: the short value's lifetime passes.
        try await Task.sleep(for: .milliseconds(60))
        let subscriber = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let events = try subscriber.events(named: "x.*", retained: true)
        try await subscriber.ready("x.*")
        try await publisher.post(name: "x.short", payload: [3])
        let received = await events.collect { event in
            if case .notification(let n) = event { return n.name.rawValue == "x.short" }
            return true
        }
        let texts = received.compactMap { event -> String? in
            if case .notification(let n) = event { return "\(n.name) \(n.payload) \(n.isRetained)" }
            return nil
        }
        #expect(texts == ["x.kept [2] true", "x.short [3] false"])
        _ = await subscriber.close()
        _ = await publisher.close()
        // The expiry is counted in the round that answers the snapshot request: the final
        // counters, as in `twoRetainedSubscriptionsOnOneBus`.
        let stats = await broker.stop()
        #expect(stats.retainedExpirations == 1, "\(stats)")
        #expect(stats.retainedNames == 1, "\(stats)")
    }

    @Test("two brokers both keep the values: a later subscription through both gets one copy of each, then the live one once")
    func twoBrokersHandOverOneCopy() async throws {
        let first = try broker()
        let second = try broker()
        let publisher = try Bus(
            BusConfiguration(publish: [.connect(first.frontendEndpoint), .connect(second.frontendEndpoint)]))
        // Each broker subscribes to every name when the publisher connects; until its subscription
        // arrives a post is filtered for it. A probe, re-posted until both kept it, says it arrived.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            try await publisher.post(name: "two.probe", payload: [0], retain: true)
            let kept = (await first.statistics().retainedNames, await second.statistics().retainedNames)
            if kept == (1, 1) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        for index in 1...10 { try await publisher.post(name: "two.n\(index)", payload: [UInt8(index)], retain: true) }
        try await waitForBroker(first) { $0.retainedNames == 11 }
        try await waitForBroker(second) { $0.retainedNames == 11 }

        let subscriber = try Bus(
            BusConfiguration(subscribe: [.connect(first.backendEndpoint), .connect(second.backendEndpoint)]))
        let events = try subscriber.events(named: "two.>", retained: true)
        try await subscriber.ready("two.>")
        try await publisher.post(name: "two.n1", payload: [99])
        let received = await events.collect { event in
            if case .notification(let n) = event { return !n.isRetained }
            return true
        }
        let notifications = received.compactMap { event -> BusNotification? in
            if case .notification(let n) = event { return n }
            return nil
        }
        let retainedNames = notifications.filter(\.isRetained).map(\.name.rawValue)
        #expect(retainedNames.count == 11, "\(retainedNames)")
        #expect(Set(retainedNames).count == 11)
        #expect(notifications.last?.payload == [99])
        #expect(await subscriber.close().lostUpstream == 0)
        _ = await publisher.close()
        _ = await first.stop()
        _ = await second.stop()
    }

    @Test("a subscriber of every name drops other subscriptions' snapshot frames silently: not delivered, not unknown, no loss")
    func everyNameSubscriberIgnoresOthersSnapshots() async throws {
        let broker = try broker()
        let publisher = try Bus(BusConfiguration(publish: [.connect(broker.frontendEndpoint)]))
        let watcher = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let watched = try watcher.events(named: ">")
        try await watcher.ready("w.a")
        try await publisher.waitForSubscribers(count: 1, matching: "w.a")
        try await publisher.post(name: "w.a", payload: [1], retain: true)
        try await waitForBroker(broker) { $0.retainedNames == 1 }

        let later = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let laterEvents = try later.events(named: "w.>", retained: true)
        try await later.ready("w.>")
        #expect(await laterEvents.first(1).count == 1)
        // The snapshot left the broker before this post: the watcher has read it when this arrives.
        try await publisher.post(name: "w.a", payload: [2])
        let received = await watched.collect { event in
            if case .notification(let n) = event { return n.payload == [2] }
            return true
        }
        let names = received.compactMap { event -> String? in
            if case .notification(let n) = event { return "\(n.name) \(n.payload) \(n.isRetained)" }
            return nil
        }
        #expect(names == ["w.a [1] false", "w.a [2] false"], "\(received)")
        let stats = await watcher.close()
        #expect(stats.unknownControlMessages == 0)
        #expect(stats.lostUpstream == 0)
        #expect(stats.rejected.isEmpty)
        #expect(stats.retainedReceived == 0)
        _ = await later.close()
        _ = await publisher.close()
        // The final counters, as in `twoRetainedSubscriptionsOnOneBus`.
        #expect(await broker.stop().retainedSnapshots == 1)
    }

    @Test("two retained subscriptions on one bus, asked together, each get their values once, then live ones once")
    func twoRetainedSubscriptionsOnOneBus() async throws {
        let broker = try broker()
        let publisher = try Bus(BusConfiguration(publish: [.connect(broker.frontendEndpoint)]))
        try await publisher.waitForSubscribers(count: 1, matching: "t.a.x")
        try await publisher.post(name: "t.a.x", payload: [1], retain: true)
        try await publisher.post(name: "t.b.y", payload: [2], retain: true)
        try await waitForBroker(broker) { $0.retainedNames == 2 }

        let subscriber = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let narrow = try subscriber.events(named: "t.a.>", retained: true)
        let wide = try subscriber.events(named: "t.>", retained: true)
        let same = try subscriber.events(named: "t.>", retained: true)
        try await subscriber.ready("t.>")
        try await publisher.post(name: "t.a.x", payload: [3])
        func texts(_ events: BusEventSequence) async -> [String] {
            let received = await events.collect { event in
                if case .notification(let n) = event { return n.payload == [3] }
                return true
            }
            return received.compactMap { event -> String? in
                if case .notification(let n) = event { return "\(n.name) \(n.payload) \(n.isRetained)" }
                return nil
            }
        }
        #expect(await texts(narrow) == ["t.a.x [1] true", "t.a.x [3] false"])
        #expect(await texts(wide) == ["t.a.x [1] true", "t.b.y [2] true", "t.a.x [3] false"])
        #expect(await texts(same) == ["t.a.x [1] true", "t.b.y [2] true", "t.a.x [3] false"])
        let stats = await subscriber.close()
        #expect(stats.retainedReceived == 5)
        #expect(stats.retainedSuperseded == 0)
        #expect(stats.lostUpstream == 0)
        #expect(stats.unknownControlMessages == 0)
        _ = await publisher.close()
        // The broker's final counters, not `statistics()`: those are published at the end of each
        // round of its loop, and one round reads the requests, sends the snapshots and forwards
        // what the publishers sent meanwhile. The subscriber's `ready` returns as the snapshots
        // arrive, so the live post can be forwarded in that same round, reach every subscription
        // and be read here before the round ends and publishes the count.
        #expect(await broker.stop().retainedSnapshots == 3)
    }

    @Test("an embedded bus keeps its own values: a later subscription gets them, marked, then live ones with no gap")
    func embeddedBusKeepsItsOwn() async throws {
        let bus = try Bus(.embedded())
        let earlier = try bus.events(named: "m.>")
        for value in 1...3 { try await bus.post(name: "m.a", payload: [UInt8(value)], retain: true) }
        try await bus.post(name: "m.b", payload: [9], retain: true)
        try await bus.post(name: "m.c", payload: [7])  // not retained: not kept
        // Once the earlier subscription has all five, the loop has handled every post.
        _ = await earlier.first(5)
        let events = try bus.events(named: "m.>", retained: true)
        try await bus.ready("m.>")
        try await bus.post(name: "m.a", payload: [4])
        let received = await events.collect { event in
            if case .notification(let n) = event { return !n.isRetained }
            return true
        }
        let texts = received.compactMap { event -> String? in
            if case .notification(let n) = event { return "\(n.name) \(n.sequence) \(n.payload) \(n.isRetained)" }
            return nil
        }
        #expect(texts == ["m.a 3 [3] true", "m.b 1 [9] true", "m.a 4 [4] false"])
        let stats = await bus.close()
        #expect(stats.lostUpstream == 0)
        #expect(stats.retainedReceived == 2)
    }
}
