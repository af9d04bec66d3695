import Testing
import NotificationBus

@Suite("README example", .timeLimit(.minutes(1)))
struct ReadmeExampleTests {
    @Test("The README's first example runs as written")
    func readmeExample() async throws {
        let bus = try Bus(.embedded())
        let orders = try bus.notifications(named: "orders.>")
        try await bus.ready(try NamePattern("orders.>"))

        try await bus.post(
            name: "orders.created", payload: Array(#"{"id":42}"#.utf8), headers: ["tenant": "acme"], contentType: .json)

        for await order in orders {
            #expect(order.name.rawValue == "orders.created" && order.sequence == 1)
            #expect(order.headers["tenant"] == "acme" && order.contentType == .json)
            break
        }
        await bus.close()
    }
}
