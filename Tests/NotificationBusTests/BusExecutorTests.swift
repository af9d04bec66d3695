import NotificationBus
import TestSupport
import Testing

@Suite("Tasks on the bus's own thread (bus.executor)", .timeLimit(.minutes(1)))
struct BusExecutorTests {
    @Test("A posting task and a for-await task on the bus's executor: every notification once, in order, across a full mailbox")
    func postAndConsumeOnTheBusThread() async throws {
        var configuration = BusConfiguration.embedded()
        configuration.outboundCapacity = 64  // posting fills the mailbox and must wait for room
        let bus = try Bus(configuration)
        let stream = try bus.notifications(named: "x.n", buffering: .suspendProducer(capacity: 32))
        try await bus.ready(NamePattern("x.n"))
        let total = 5_000
        let consumer = Task(executorPreference: bus.executor) { () -> [UInt64] in
            var sequences: [UInt64] = []
            for await notification in stream {
                sequences.append(notification.sequence)
                if sequences.count == total { break }
            }
            return sequences
        }
        try await Task(executorPreference: bus.executor) {
            for _ in 0..<total { try await bus.post(name: "x.n") }
        }.value(within: .seconds(30))
        #expect(await consumer.value(within: .seconds(30)) == Array(1...UInt64(total)))
        #expect(stream.stats.lostUpstream == 0 && stream.stats.droppedLocalBuffer == 0)
        await bus.close()
    }

    @Test("After the bus closes, a task that prefers its executor still runs (elsewhere), and posting there says closed")
    func executorOutlivesTheBus() async throws {
        let bus = try Bus(.embedded())
        await bus.close()
        let outcome = await Task(executorPreference: bus.executor) { () -> String in
            do {
                try await bus.post(name: "late.n")
                return "posted"
            } catch {
                return "\(error)"
            }
        }.value
        #expect(outcome == "\(BusError.closed)")
    }

    @Test("Closing the bus from a task on its own executor completes")
    func closeFromTheBusThread() async throws {
        let bus = try Bus(.embedded())
        let stats = await Task(executorPreference: bus.executor) { () -> BusStats in
            try? await bus.post(name: "c.n")
            return await bus.close()
        }.value
        // No subscriber: counted as posted and unwanted, never encoded or sent.
        #expect(stats.posted == 1 && stats.unwanted == 1 && stats.sent == 0)
    }

    @Test("With a long idle spin, a consumer on the bus's executor never spins on the bus's thread (it would stall it)", .timeLimit(.minutes(1)))
    func consumerOnExecutorDoesNotSpinTheBusThread() async throws {
        var configuration = BusConfiguration.embedded()
        configuration.idleSpin = .seconds(2)  // 2 s: each wait spun on the bus's thread stalls it that long
        let bus = try Bus(configuration)
        let stream = try bus.notifications(named: "s.n")
        try await bus.ready(NamePattern("s.n"))
        let (acks, ack) = AsyncStream<Void>.makeStream()
        let consumer = Task(executorPreference: bus.executor) { () -> Int in
            var count = 0
            for await _ in stream {
                count += 1
                ack.yield()
                if count == 50 { break }
            }
            return count
        }
        // Ping-pong: the consumer waits with nothing buffered before every notification; 50 waits
        // spun on the bus's thread would take 100 s, beyond the time limit.
        for _ in 0..<50 {
            try await bus.post(name: "s.n")
            #expect(await acks.first(1).count == 1, "the consumer did not acknowledge")
        }
        #expect(await consumer.value(within: .seconds(30)) == 50)
        await bus.close()
    }
}
