import Synchronization
import Testing
import NotificationBus

/// A sink with a bounded queue, drained by the test: what a BusViews feed does.
private final class QueueSink: BusEventSink {
    struct State {
        var queue: [BusEvent] = []
        var finished = false
        var fullReports = 0
    }
    let state = Mutex(State())
    let capacity: Int
    let arrived = AsyncStream<Void>.makeStream()

    init(capacity: Int) {
        self.capacity = capacity
    }

    func receive(_ event: BusEvent) {
        state.withLock { $0.queue.append(event) }
        arrived.continuation.yield()
    }

    var isFull: Bool {
        state.withLock { state in
            guard state.queue.count >= capacity else { return false }
            state.fullReports += 1
            return true
        }
    }

    func finish() {
        state.withLock { $0.finished = true }
        arrived.continuation.yield()
    }

    func take() -> [BusEvent] {
        state.withLock { state in
            defer { state.queue.removeAll() }
            return state.queue
        }
    }
}

@Suite("Sink subscriptions: events handed over on the I/O thread", .timeLimit(.minutes(1)))
struct BusEventSinkTests {
    @Test("A full sink pauses the bus; resumeReading lets it go on; every notification arrives once, in order")
    func backPressureThroughTheSink() async throws {
        let bus = try Bus(.embedded())
        let sink = QueueSink(capacity: 50)
        let subscription = try bus.subscribe(NamePattern("s.n"), sink: sink)
        try await bus.ready(NamePattern("s.n"))
        let total = 2_000
        let producer = Task {
            for index in 1...total { try await bus.post(name: "s.n", payload: Array("\(index)".utf8)) }
        }
        var payloads: [String] = []
        var iterator = sink.arrived.stream.makeAsyncIterator()
        while payloads.count < total, await iterator.next() != nil {
            for case .notification(let notification) in sink.take() {
                payloads.append(String(decoding: notification.payload, as: UTF8.self))
            }
            subscription.resumeReading()
        }
        try await producer.value(within: .seconds(30))
        #expect(payloads == (1...total).map(String.init))
        #expect(sink.state.withLock { $0.fullReports } > 0)  // the bound was reached and held
        let stats = subscription.stats
        #expect(stats.received == UInt64(total) && stats.delivered == UInt64(total) && stats.lostUpstream == 0)
        await bus.close()
        #expect(sink.state.withLock { $0.finished })
    }

    @Test("A cancelled sink subscription gets nothing more and unsubscribes at the publisher")
    func cancelStopsDelivery() async throws {
        let bus = try Bus(.embedded())
        let sink = QueueSink(capacity: 1_000)
        let name = NotificationName("c.n")
        let subscription = try bus.subscribe(NamePattern(exactly: name), sink: sink)
        try await bus.waitForSubscribers(count: 1, matching: name)
        subscription.cancel()
        try await bus.waitForNoSubscribers(matching: name)
        for _ in 0..<10 { try await bus.post(name: name) }
        let stats = await bus.close()
        // Nobody wants them any more: filtered before encoding, counted, not sent.
        #expect(stats.posted == 10 && stats.unwanted == 10 && stats.sent == 0)
        #expect(sink.take().isEmpty)
        #expect(subscription.stats.received == 0)
        #expect(!sink.state.withLock { $0.finished })  // ended by cancel, not by the bus
    }
}
