import BusViews
import NotificationBus
import Testing
import TestSupport

/// Both kinds of consumer on one pattern.
private struct BothConsumers: View {
    let pattern: NamePattern
    let received: EventLog<String>
    let looped: EventLog<String>
    let loopEnded: Gate

    var body: ViewContent {
        ViewContent()
            .onReceive(pattern) { received.append(text($0)) }
            .task(subscribing: pattern) { feed in
                defer { loopEnded.fire() }
                for await notification in feed.notifications { looped.append(text(notification)) }
            }
    }
}

@Suite("Article claim 7: conditional content destroys the view", .timeLimit(.minutes(1)))
@MainActor
struct ClaimRemovalTests {
    @Test("7. A view removed by conditional content stops both consumers and releases its bus subscriptions",
          .timeLimit(.minutes(1)))
    func removalStopsBothConsumers() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let consumed = NamePattern("claim7.>")
        let received = EventLog<String>()
        let looped = EventLog<String>()
        let loopEnded = Gate()
        let container = Conditional {
            BothConsumers(pattern: consumed, received: received, looped: looped, loopEnded: loopEnded)
        }
        host.mount(container)
        try await bus.ready(consumed)
        for index in 0..<5 { try await bus.post(name: "claim7.item", payload: Array("\(index)".utf8)) }
        await received.wait(count: 5)
        await looped.wait(count: 5)
        let node = try #require(host.node(at: "root/content"))
        #expect(node.subscriptionStats.count == 2)

        container.show = false
        #expect(!node.exists)
        #expect(host.node(at: "root/content") == nil)
        await loopEnded.wait()
        try await bus.waitForNoSubscribers(matching: NotificationName("claim7.item"))

        // Later posts reach a fence subscriber but neither removed consumer.
        let fence = try bus.notifications(named: "fence.>")
        try await bus.ready(NamePattern("fence.>"))
        for index in 5..<10 { try await bus.post(name: "claim7.item", payload: Array("\(index)".utf8)) }
        try await bus.post(name: "fence.done")
        #expect(await fence.first(1).first?.name.rawValue == "fence.done")
        #expect(received.events.count == 5)
        #expect(looped.events.count == 5)
        #expect(bus.stats.activeSubscriptions == 1)
        host.unmount()
        await bus.close()
    }
}
