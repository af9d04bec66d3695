import NotificationBus
import TestSupport
import Testing

@Suite("README example", .timeLimit(.minutes(1)))
struct ReadmeExampleTests {
    struct OrderCreated: BusAsyncMessage {
        static let busName: NotificationName = "orders.created"  // checked like any name literal
        var id: Int
        var total: Double
    }

    @Test("The README's first example, a message type, posts, prints and ends as written")
    func readmeTypedExample() async throws {
        // As README.md's first block, in a task bounded in time (the README's loop ends by `break`).
        let printed = try await withTimeout(.seconds(30), "the README's first example") { () async throws -> [String] in
            var lines: [String] = []
            let bus = try Bus(.embedded())  // one process, inproc://; see "Topologies"
            let orders = try bus.messages(of: OrderCreated.self)
            try await bus.ready(orders.pattern)  // live at a publisher: no sleeping past the slow joiner

            try await bus.post(OrderCreated(id: 42, total: 9.5))  // JSON on the wire (content type json)

            for await order in orders {  // cancelling the task unsubscribes at the publisher
                lines.append("order \(order.id) total \(order.total)")  // README: print("order", order.id, "total", order.total)
                break  // one is enough here; an observer would loop on
            }
            await bus.close()
            return lines
        }
        #expect(printed == ["order 42 total 9.5"])
    }

    @Test("The README's byte API example runs as written")
    func readmeExample() async throws {
        let bus = try Bus(.embedded())
        let orders = try bus.notifications(named: "orders.>")
        try await bus.ready("orders.>")

        try await bus.post(
            name: "orders.created", payload: Array(#"{"id":42}"#.utf8), headers: ["tenant": "acme"], contentType: .json)

        // The README's loop runs for as long as notifications come; the test takes the one posted
        // (bounded: an empty or silent stream fails here instead of passing or hanging).
        let order = try #require(await orders.first(1).first, "the posted notification did not arrive")
        #expect(order.name.rawValue == "orders.created" && order.sequence == 1)
        #expect(order.headers["tenant"] == "acme" && order.contentType == .json)
        await bus.close()
    }
}
