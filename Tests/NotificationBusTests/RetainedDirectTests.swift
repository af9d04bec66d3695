import Foundation
import TestSupport
import Testing
@testable import NotificationBus

// Retained values in the direct topology (NBP-1 §18.4): a publisher that binds keeps its own
// retained posts and answers the snapshot requests of subscribers connected straight to it,
// over real sockets (tcp on 127.0.0.1, ipc under a temporary directory).

@Suite("Retained values from a binding publisher", .serialized, .timeLimit(.minutes(1)))
struct RetainedDirectTests {
    private func texts(_ events: BusEventSequence, until isLast: @escaping @Sendable (BusNotification) -> Bool) async -> [String] {
        let received = await events.collect { event in
            if case .notification(let n) = event { return isLast(n) }
            return false
        }
        return received.compactMap { event -> String? in
            if case .notification(let n) = event { return "\(n.name) \(n.sequence) \(n.payload) \(n.isRetained)" }
            return nil
        }
    }

    /// Waits (bounded) until the publisher's loop has handed `count` notifications to ZeroMQ. A
    /// post returns once queued: one the loop sends only after a subscriber connected reaches it
    /// live, before its snapshot, and the snapshot's entry of that name is then skipped (NBP-1
    /// §18, counted as superseded). Sent before any subscriber, ZeroMQ drops it. `stats.sent` is
    /// the loop's own count, polled (nothing else says when it sent).
    private func waitUntilSent(_ publisher: Bus, _ count: UInt64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while publisher.stats.sent < count {
            guard clock.now < deadline else {
                Issue.record("the publisher never sent its \(count) posts: \(publisher.stats)", sourceLocation: sourceLocation)
                throw TimedOut("the publisher's posts")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(publisher.stats.sent == count, "\(publisher.stats)", sourceLocation: sourceLocation)
    }

    @Test("tcp: a subscriber connected after the posts gets each name's current value, marked, ready returns, then live ones with no gap")
    func tcpSubscriberGetsCurrentValues() async throws {
        let publisher = try Bus(.directPublisher(bind: "tcp://127.0.0.1:*"))
        // Posted before any subscriber: kept all the same.
        for value in 1...3 { try await publisher.post(name: "d.a", payload: [UInt8(value)], retain: true) }
        try await publisher.post(name: "d.b", payload: [9], retain: true)
        try await publisher.post(name: "d.c", payload: [7])  // not retained: not kept
        try await publisher.post(name: "d.e", payload: [1], retain: true)
        try await publisher.clearRetained(name: "d.e")
        // Out before the subscriber connects (d.c, wanted by no one, is not sent at all).
        try await waitUntilSent(publisher, 6)

        let subscriber = try Bus(.directSubscriber(connect: publisher.endpoints))
        let events = try subscriber.events(named: "d.>", retained: true)
        try await subscriber.ready("d.>")
        try await publisher.post(name: "d.a", payload: [4])
        let received = await texts(events) { !$0.isRetained }
        #expect(received == ["d.a 3 [3] true", "d.b 1 [9] true", "d.a 4 [4] false"])
        let stats = await subscriber.close()
        #expect(stats.lostUpstream == 0)
        #expect(stats.retainedReceived == 2)
        #expect(stats.unknownControlMessages == 0)
        // d.a's history before its value is not owed to a subscription that just began.
        #expect(stats.streamsJoinedLate == 1 && stats.notificationsBeforeJoining == 2)
        _ = await publisher.close()
    }

    @Test("ipc: two retained subscriptions on one bus each get their values once; a plain one gets none")
    func ipcTwoSubscriptionsEachGetTheirs() async throws {
        let endpoint = try temporaryIPCEndpoint("retained.sock")
        let publisher = try Bus(.directPublisher(bind: endpoint))
        try await publisher.post(name: "i.x.one", payload: [1], retain: true)
        try await publisher.post(name: "i.y.two", payload: [2], retain: true)
        try await waitUntilSent(publisher, 2)

        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let narrow = try subscriber.events(named: "i.x.>", retained: true)
        let wide = try subscriber.events(named: "i.>", retained: true)
        let plain = try subscriber.events(named: "i.>")
        try await subscriber.ready("i.>")
        try await publisher.post(name: "i.x.one", payload: [3])
        let isLive: @Sendable (BusNotification) -> Bool = { !$0.isRetained }
        #expect(await texts(narrow, until: isLive) == ["i.x.one 1 [1] true", "i.x.one 2 [3] false"])
        #expect(await texts(wide, until: isLive) == ["i.x.one 1 [1] true", "i.y.two 1 [2] true", "i.x.one 2 [3] false"])
        #expect(await texts(plain, until: isLive) == ["i.x.one 2 [3] false"])
        let stats = await subscriber.close()
        #expect(stats.retainedReceived == 3)
        #expect(stats.retainedSuperseded == 0)
        #expect(stats.lostUpstream == 0)
        _ = await publisher.close()
    }

    @Test("a publisher that connects (to a broker) keeps nothing of its own; one that binds does")
    func onlyBindingPublishersKeep() async throws {
        let binding = try Bus(.directPublisher(bind: "tcp://127.0.0.1:*"))
        #expect(binding.core.keepsOwnRetained)
        let connecting = try Bus(.brokered(frontend: "tcp://127.0.0.1:1", backend: "tcp://127.0.0.1:2"))
        #expect(!connecting.core.keepsOwnRetained)
        let embedded = try Bus(.embedded())
        #expect(!embedded.core.keepsOwnRetained)
        for bus in [binding, connecting, embedded] { _ = await bus.close() }
    }
}
