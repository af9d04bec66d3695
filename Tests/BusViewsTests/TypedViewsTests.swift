import BusViews
import NotificationBus
import TestSupport
import Testing

// The onReceive style and the task style with a message type (issue 42, item 7): the same
// lifetimes and metrics as with a pattern, decoded values handed over, what does not decode
// counted in `ViewMetrics.undecodable` and skipped.

private struct ViewOrder: BusAsyncMessage, Equatable {
    static let busName: NotificationName = "views.order"
    var id: Int
}

private struct OrderBadge: View {
    @State var last = 0
    let seen: EventLog<Int>

    var body: ViewContent {
        ViewContent().onReceive(ViewOrder.self) { order in
            MainActor.assertIsolated()
            last = order.id
            seen.append(order.id)
        }
    }
}

private struct OrderList: View {
    @State var count = 0
    let seen: EventLog<Int>

    var body: ViewContent {
        ViewContent().task(subscribing: ViewOrder.self) { orders in
            for await order in orders where !Task.isCancelled {
                count += 1
                seen.append(order.id)
            }
        }
    }
}

@Suite("Typed messages in views", .timeLimit(.minutes(1)))
@MainActor
struct TypedViewsTests {
    static func postMixed(_ bus: Bus) async throws {
        try await bus.post(ViewOrder(id: 1))
        try await bus.post(name: "views.order", payload: Array(#"{"id":"#.utf8), contentType: .json)  // malformed
        try await bus.post(ViewOrder(id: 2))
        try await bus.post(name: "views.order", payload: Array(#"{"id":"two"}"#.utf8), contentType: .json)  // mistyped
        try await bus.post(ViewOrder(id: 3))
    }

    @Test("onReceive(M.self): each message on the main actor and a render; undecodable ones counted, no render")
    func typedOnReceive() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let seen = EventLog<Int>()
        let node = host.mount(OrderBadge(seen: seen))
        try await bus.ready(ViewOrder.busObservedPattern)
        try await Self.postMixed(bus)
        await seen.wait(count: 3)
        let metrics = await node.waitForMetrics(within: standardWait) { $0.undecodable == 2 && $0.messagesHandled == 3 }
        #expect(seen.events == [1, 2, 3])
        #expect(metrics.bodyEvaluations == 4 && metrics.stateUpdates == 3)
        host.unmount()
        await bus.close()
    }

    @Test("task(subscribing: M.self): the loop takes message values; undecodable ones counted and skipped")
    func typedTask() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let seen = EventLog<Int>()
        let node = host.mount(OrderList(seen: seen))
        try await bus.ready(ViewOrder.busObservedPattern)
        try await Self.postMixed(bus)
        await seen.wait(count: 3)
        #expect(seen.events == [1, 2, 3])
        await node.waitForMetrics(within: standardWait) { $0.undecodable == 2 && $0.stateUpdates == 3 }
        host.unmount()
        await bus.close()
    }
}
