import Foundation
import TestSupport
import Testing

@testable import NotificationBus
// Bridges between the bus and a local NotificationCenter (issue 42, item 6): remote messages reach
// Foundation observers unchanged, local posts reach the bus, and nothing echoes. Each test uses
// centers of its own (not `.default`), so parallel tests do not see each other's posts.

struct BridgedOrder: BusAsyncMessage, Equatable {
    static let busName: NotificationName = "bridged.order"
    var id: Int
}

struct BridgedBadge: BusMainActorMessage, Equatable {
    static let busName: NotificationName = "bridged.badge"
    var count: Int
}

@Suite("Bridges to Foundation's NotificationCenter", .timeLimit(.minutes(1)))
struct MessageBridgeTests {
    /// Two buses through an in-process broker over tcp: two processes' worth of buses.
    static func pair() throws -> (Broker, Bus, Bus) {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let a = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let b = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        return (broker, a, b)
    }

    @Test("An async type: another publisher's messages reach Foundation observers; local posts reach the bus")
    func asyncBothDirectionsOnTwoBuses() async throws {
        let (broker, a, b) = try Self.pair()
        let centerB = NotificationCenter()
        let into = try b.forward(BridgedOrder.self, to: centerB)
        let intoStats = Self.watch(into)
        let got = Watched<[Int]>([])
        let observer = centerB.addObserver(of: BusNoSubject.self, for: NotificationCenter.BaseMessageIdentifier<BridgedOrder>()) {
            order async in got.update { $0.append(order.id) }
        }
        let centerA = NotificationCenter()
        let from = try a.forward(BridgedOrder.self, from: centerA)
        try await a.waitForSubscribers(matching: BridgedOrder.busName)

        let fromStats = Self.watch(from)
        centerA.post(BridgedOrder(id: 1))  // a local Foundation post in "process" A (delivered later,
        #expect(await fromStats.wait(until: { $0.forwarded == 1 }))  // as Foundation calls async observers)...
        try await a.post(BridgedOrder(id: 2))  // ...and a bus post there, after it
        #expect(await got.wait(until: { $0.count == 2 }))  // ...reach B's Foundation observers, in order
        #expect(got.value == [1, 2])
        #expect(await intoStats.wait(until: { $0.forwarded == 2 }))  // counted right after each post

        // B's own post does not come back into B's center.
        try await b.post(BridgedOrder(id: 3))
        #expect(await intoStats.wait(until: { $0.echoesSkipped == 1 }))
        try await a.post(BridgedOrder(id: 4))
        #expect(await got.wait(until: { $0.count == 3 }))
        #expect(got.value == [1, 2, 4])
        #expect(await intoStats.wait(until: { $0.forwarded == 3 }))

        // Both ways for one async type on one bus is refused: it would echo.
        #expect(throws: BusError.self) { _ = try b.forward(BridgedOrder.self, from: centerB) }
        into.cancel()
        let again = try b.forward(BridgedOrder.self, from: centerB)  // once the other way is gone
        again.cancel()
        centerB.removeObserver(observer)
        from.cancel()
        await a.close()
        await b.close()
        await broker.stop()
    }

    @Test("A main-actor type bridged both ways in two processes: delivered once each way, no echo")
    func mainActorBothWaysNoLoop() async throws {
        let (broker, a, b) = try Self.pair()
        let centerA = NotificationCenter(), centerB = NotificationCenter()
        let aIn = try a.forward(BridgedBadge.self, to: centerA), aOut = try a.forward(BridgedBadge.self, from: centerA)
        let bIn = try b.forward(BridgedBadge.self, to: centerB), bOut = try b.forward(BridgedBadge.self, from: centerB)
        let aInStats = Self.watch(aIn), bInStats = Self.watch(bIn)
        let seenA = Watched<[Int]>([]), seenB = Watched<[Int]>([])
        let observers = await MainActor.run {
            (centerA.addObserver(of: BusNoSubject.self, for: NotificationCenter.BaseMessageIdentifier<BridgedBadge>()) { badge in
                MainActor.assertIsolated()
                seenA.update { $0.append(badge.count) }
            },
            centerB.addObserver(of: BusNoSubject.self, for: NotificationCenter.BaseMessageIdentifier<BridgedBadge>()) { badge in
                seenB.update { $0.append(badge.count) }
            })
        }
        try await a.waitForSubscribers(count: 2, matching: BridgedBadge.busName)
        try await b.waitForSubscribers(count: 2, matching: BridgedBadge.busName)

        await MainActor.run { centerA.post(BridgedBadge(count: 7)) }
        #expect(await seenB.wait(until: { $0 == [7] }))
        await MainActor.run {}  // the main-actor job that posted into centerB has finished
        // B's outbound bridge saw its own injection and did not post it back; A skipped its own post.
        #expect(bOut.stats.echoesSkipped == 1 && bOut.stats.forwarded == 0 && b.stats.messagesEncoded == 0)
        #expect(aOut.stats.forwarded == 1)
        #expect(await bInStats.wait(until: { $0.forwarded == 1 }))

        await MainActor.run { centerB.post(BridgedBadge(count: 8)) }
        #expect(await seenA.wait(until: { $0 == [7, 8] }))  // A's own 7 locally, then B's 8 via the bus
        await MainActor.run {}
        #expect(aOut.stats.echoesSkipped == 1 && a.stats.messagesEncoded == 1)
        #expect(await aInStats.wait(until: { $0.forwarded == 1 }))
        // Each bus skipped its own post on the way in: what came back through the broker.
        #expect(await aInStats.wait(until: { $0.echoesSkipped == 1 }))
        #expect(await bInStats.wait(until: { $0.echoesSkipped == 1 }))
        #expect(seenA.value == [7, 8] && seenB.value == [7, 8])
        await MainActor.run {
            centerA.removeObserver(observers.0)
            centerB.removeObserver(observers.1)
        }
        for bridge in [aIn, aOut, bIn, bOut] { bridge.cancel() }
        await a.close()
        await b.close()
        await broker.stop()
    }

    /// A bridge's counters as they change (a skipped echo has no other event to await).
    static func watch(_ bridge: MessageBridge) -> Watched<MessageBridge.Stats> {
        let watched = Watched(MessageBridge.Stats())
        bridge.statsListener.withLock { $0 = { stats in watched.update { $0 = stats } } }
        watched.update { $0 = bridge.stats }  // a change before the listener was set
        return watched
    }
}
