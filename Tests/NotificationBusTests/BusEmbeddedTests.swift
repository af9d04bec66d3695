import Testing
import NotificationBus
import TestSupport

@Suite("Bus in one process (inproc)", .timeLimit(.minutes(1)))
struct BusEmbeddedTests {
    @Test("Every posted notification arrives once, in order, with its stamp")
    func deliversInOrder() async throws {
        let bus = try Bus(.embedded())
        let orders = try bus.notifications(named: "orders.>")
        try await bus.ready(NamePattern("orders.>"))
        for index in 1...1_000 {
            try await bus.post(name: "orders.created", payload: Array("\(index)".utf8), headers: ["i": "\(index)"])
        }
        let notifications = await orders.first(1_000)
        for (offset, notification) in notifications.enumerated() {
            let index = offset + 1
            #expect(notification.sequence == UInt64(index))
            #expect(notification.payload == Array("\(index)".utf8))
            #expect(notification.headers["i"] == "\(index)")
            #expect(notification.publisherID == bus.publisherID)
            #expect(notification.timestamp > 0)
        }
        #expect(notifications.count == 1_000)
        let stats = orders.stats
        #expect(stats.received == 1_000 && stats.delivered == 1_000 && stats.lostUpstream == 0)
        await bus.close()
    }

    @Test("Patterns select exactly the right names")
    func patternsSelect() async throws {
        let bus = try Bus(.embedded())
        let eu = try bus.notifications(named: "orders.*.eu")
        let exact = try bus.notifications(named: "orders.created")
        try await bus.ready(NamePattern("orders.>"))
        let names = ["orders.created", "orders.created.eu", "orders.created.us", "orders.x.eu", "orders.createdx", "orders.a.b.eu"]
        for name in names { try await bus.post(name: name) }
        try await bus.post(name: "orders.end.eu")
        try await bus.post(name: "orders.created")
        let euNames = await eu.collect { $0.name.rawValue == "orders.end.eu" }.map(\.name.rawValue)
        #expect(euNames == ["orders.created.eu", "orders.x.eu", "orders.end.eu"])
        #expect(await exact.first(2).map(\.name.rawValue) == ["orders.created", "orders.created"])
        #expect(eu.stats.filteredOut >= 3)  // orders.created.us, orders.a.b.eu, orders.createdx... inside prefix "orders."
        await bus.close()
    }

    @Test("Closing ends a waiting consumer and reports final counters")
    func closeEndsConsumers() async throws {
        let bus = try Bus(.embedded())
        let stream = try bus.notifications(named: "a.>")
        try await bus.ready(NamePattern("a.>"))
        try await bus.post(name: "a.b")
        let consumer = Task { () -> Int in
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        try await bus.waitForSubscribers(count: 1, matching: NotificationName("a.b"))
        let stats = await bus.close()
        #expect(await consumer.value(within: .seconds(30)) == 1)
        #expect(stats.posted == 1 && stats.sent == 1 && stats.unsent == 0)
        await #expect(throws: BusError.closed) { try await bus.post(name: "a.b") }
    }

    @Test("A slow local consumer holds posts back (suspendProducer): all arrive once, in order, nothing lost or buffered beyond the bound")
    func localBackPressureIsLossless() async throws {
        var configuration = BusConfiguration.embedded()
        configuration.outboundCapacity = 64
        let bus = try Bus(configuration)
        let stream = try bus.notifications(named: "load.n", buffering: .suspendProducer(capacity: 16))
        try await bus.ready(NamePattern("load.n"))
        let total = 5_000
        let producer = Task {
            for index in 1...total { try await bus.post(name: "load.n", payload: Array("\(index)".utf8)) }
        }
        let (received, inOrder, largestBacklog) = try await withTimeout(.seconds(30), "the slow consumer") {
            var received = 0
            var inOrder = true
            var largestBacklog: UInt64 = 0
            for await notification in stream {
                received += 1
                if notification.payload != Array("\(received)".utf8) { inOrder = false }
                if received % 97 == 0 {
                    largestBacklog = max(largestBacklog, stream.stats.buffered)
                    await Task.yield()
                }
                if received == total { break }
            }
            return (received, inOrder, largestBacklog)
        }
        try await producer.value(within: .seconds(30))
        #expect(received == total && inOrder)
        let stats = stream.stats
        #expect(stats.lostUpstream == 0 && stats.droppedLocalBuffer == 0)
        // Bounded: the capacity, plus at most one I/O batch (1,024) taken before the pause.
        #expect(largestBacklog <= 16 + 1_024)
        await bus.close()
    }

    @Test("An embedded bus that also publishes on ipc: its local and its remote subscriber each get every notification once")
    func localAndRemoteSubscribersEachGetOneCopy() async throws {
        // (inproc only joins sockets of one ZeroMQ context, and every bus has its own, so other
        // buses reach an embedded bus through another endpoint.)
        let endpoint = try temporaryIPCEndpoint()
        var configuration = BusConfiguration.embedded()
        configuration.publish.append(.bind(endpoint))
        let bus = try Bus(configuration)
        let other = try Bus(.directSubscriber(connect: [endpoint]))
        let local = try bus.notifications(named: "x.>")
        let remote = try other.notifications(named: "x.>")
        try await other.ready(NamePattern("x.>"))
        try await bus.waitForSubscribers(count: 2, matching: NotificationName("x.y"))
        for index in 1...500 { try await bus.post(name: "x.y", payload: Array("\(index)".utf8)) }
        try await bus.post(name: "x.end")
        for stream in [local, remote] {
            let received = await stream.collect { $0.name.rawValue == "x.end" }
            #expect(received.last?.name.rawValue == "x.end")
            #expect(received.dropLast().map(\.sequence) == Array(1...500))
            #expect(stream.stats.received == 501 && stream.stats.lostUpstream == 0)
        }
        await other.close()
        await bus.close()
    }

    @Test("The publisher side sees local subscriptions come and go (waitForSubscribers / waitForNoSubscribers)")
    func localPresenceIsVisible() async throws {
        let bus = try Bus(.embedded())
        let name = NotificationName("p.q")
        let first = try bus.notifications(named: "p.>")
        let second = try bus.notifications(named: "p.q")
        // Subscribers are counted per bus: both local subscriptions are this one bus. Each wait
        // throws .timedOut when the count it waits for does not come.
        await #expect(throws: Never.self) { try await bus.waitForSubscribers(count: 1, matching: name, timeout: .seconds(5)) }
        first.cancel()
        second.cancel()
        await #expect(throws: Never.self) { try await bus.waitForNoSubscribers(matching: name, timeout: .seconds(5)) }
        await bus.close()
    }

    @Test("Posts still queued when the bus closes reach the local consumer before its stream ends")
    func closeDeliversQueuedPostsLocally() async throws {
        let bus = try Bus(.embedded())
        let stream = try bus.notifications(named: "c.n")
        try await bus.ready(NamePattern("c.n"))
        for index in 1...2_000 { try bus.postNow(name: NotificationName("c.n"), payload: Array("\(index)".utf8)) }
        let stats = await bus.close()
        // The stream ends once its buffer drains (collect stops at the end, or fails after 30 s).
        let received = await stream.collect { _ in false }.count
        #expect(received == 2_000)
        #expect(stats.unsent == 0 && stats.sent == 2_000)
    }

    @Test("With the idle spin on, delivery is unchanged and a waiting consumer still ends when cancelled or closed")
    func idleSpinKeepsSemantics() async throws {
        var configuration = BusConfiguration.embedded()
        configuration.idleSpin = .microseconds(300)
        let bus = try Bus(configuration)
        let stream = try bus.notifications(named: "spin.n")
        let idle = try bus.notifications(named: "never.posted")
        try await bus.ready(NamePattern("spin.n"))
        let waiting = Task { () -> Int in
            var count = 0
            for await _ in idle { count += 1 }
            return count
        }
        for index in 1...300 { try await bus.post(name: "spin.n", payload: Array("\(index)".utf8)) }
        let received = await stream.first(300)
        #expect(received.map(\.payload) == (1...300).map { Array("\($0)".utf8) })
        waiting.cancel()
        #expect(await waiting.value(within: .seconds(30)) == 0)
        await bus.close()
    }
}
