import NotificationBus
import TestSupport
import Testing

@Suite("README example", .timeLimit(.minutes(1)))
struct ReadmeExampleTests {
    @Test("The README's first example runs as written")
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
