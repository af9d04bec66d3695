import Testing
import NotificationBus

@Suite("Bus in one process (inproc)")
struct BusEmbeddedTests {
    @Test("Every posted notification arrives once, in order, with its stamp")
    func deliversInOrder() async throws {
        let bus = try Bus(.embedded())
        let orders = try bus.notifications(named: "orders.>")
        try await bus.ready(try NamePattern("orders.>"))
        for index in 1...1_000 {
            try await bus.post(name: "orders.created", payload: Array("\(index)".utf8), headers: ["i": "\(index)"])
        }
        var received = 0
        for await notification in orders {
            received += 1
            #expect(notification.sequence == UInt64(received))
            #expect(notification.payload == Array("\(received)".utf8))
            #expect(notification.headers["i"] == "\(received)")
            #expect(notification.publisherID == bus.publisherID)
            #expect(notification.timestamp > 0)
            if received == 1_000 { break }
        }
        #expect(received == 1_000)
        let stats = orders.stats
        #expect(stats.received == 1_000 && stats.delivered == 1_000 && stats.lostUpstream == 0)
        await bus.close()
    }

    @Test("Patterns select exactly the right names")
    func patternsSelect() async throws {
        let bus = try Bus(.embedded())
        let eu = try bus.notifications(named: "orders.*.eu")
        let exact = try bus.notifications(named: "orders.created")
        try await bus.ready(try NamePattern("orders.>"))
        let names = ["orders.created", "orders.created.eu", "orders.created.us", "orders.x.eu", "orders.createdx", "orders.a.b.eu"]
        for name in names { try await bus.post(name: name) }
        try await bus.post(name: "orders.end.eu")
        try await bus.post(name: "orders.created")
        var euNames: [String] = []
        for await n in eu {
            euNames.append(n.name.rawValue)
            if n.name.rawValue == "orders.end.eu" { break }
        }
        #expect(euNames == ["orders.created.eu", "orders.x.eu", "orders.end.eu"])
        var exactCount = 0
        for await n in exact {
            #expect(n.name.rawValue == "orders.created")
            exactCount += 1
            if exactCount == 2 { break }
        }
        #expect(eu.stats.filteredOut >= 3)  // orders.created.us, orders.a.b.eu, orders.createdx... inside prefix "orders."
        await bus.close()
    }

    @Test("Closing ends a waiting consumer and reports final counters")
    func closeEndsConsumers() async throws {
        let bus = try Bus(.embedded())
        let stream = try bus.notifications(named: "a.>")
        try await bus.ready(try NamePattern("a.>"))
        try await bus.post(name: "a.b")
        let consumer = Task { () -> Int in
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        try await bus.waitForSubscribers(count: 1, matching: try NotificationName("a.b"))
        let stats = await bus.close()
        #expect(await consumer.value == 1)
        #expect(stats.posted == 1 && stats.sent == 1 && stats.unsent == 0)
        await #expect(throws: BusError.closed) { try await bus.post(name: "a.b") }
    }
}
