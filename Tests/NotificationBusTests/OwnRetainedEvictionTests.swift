import Logging
import TestSupport
import Testing
@testable import NotificationBus

// A binding publisher keeps its own retained values (NBP-1 §18.4) within
// `BusConfiguration.retainedNames` and `retainedBytes`; what it evicts is counted
// (`BusStats.ownRetainedEvictions`) and the first eviction logged as a warning. Real sockets:
// tcp on 127.0.0.1, a subscriber that asks for the current values after the posts.

@Suite("A binding publisher counts the retained values it evicts", .serialized, .timeLimit(.minutes(1)))
struct OwnRetainedEvictionTests {
    @Test("20 retained names into 8 places: 12 evicted, counted and logged once; a later subscriber gets the last 8")
    func evictionsAreCounted() async throws {
        let (logger, lines) = KeptLines.logger()
        var configuration = BusConfiguration.directPublisher(bind: "tcp://127.0.0.1:*")
        configuration.retainedNames = 8
        configuration.logger = logger
        let publisher = try Bus(configuration)
        for index in 1...20 { try await publisher.post(name: "own.k\(index)", payload: [UInt8(index)], retain: true) }
        // A name updated in place evicts nothing; a clear evicts nothing.
        try await publisher.post(name: "own.k20", payload: [99], retain: true)
        #expect(publisher.stats.ownRetainedEvictions == 12, "\(publisher.stats)")
        #expect(publisher.core.ownRetained?.withLock { $0.count } == 8)

        let subscriber = try Bus(.directSubscriber(connect: publisher.endpoints))
        let events = try subscriber.events(named: "own.>", retained: true)
        try await subscriber.ready("own.>")
        // On a loaded machine the publisher's I/O thread may still be sending the posts live when
        // the subscriber connects: those come too, unmarked. The retained ones are what is tested.
        var names: [String] = []
        var received: [BusEvent] = []
        for await event in events {
            received.append(event)
            if case .notification(let n) = event, n.isRetained { names.append(n.name.rawValue) }
            if names.count == 8 || received.count >= 40 { break }
        }
        #expect(Set(names) == Set((13...20).map { "own.k\($0)" }), "\(received)")
        #expect(await lines.wait { $0.contains { $0.message.contains("evicted a retained value (own.k1)") } }, "\(lines.value)")

        for index in 21...23 { try await publisher.post(name: "own.k\(index)", payload: [UInt8(index)], retain: true) }
        let stats = await publisher.close()
        #expect(stats.ownRetainedEvictions == 15 && stats.ownRetainedExpirations == 0, "\(stats)")
        // Logged once, however many followed.
        #expect(lines.value.filter { $0.message.contains("evicted a retained value") }.count == 1, "\(lines.value)")
        _ = await subscriber.close()
    }

    @Test("A value past retainedBytes is not kept and counts as evicted; expired values are counted when asked for")
    func tooLargeAndExpired() async throws {
        var configuration = BusConfiguration.directPublisher(bind: "tcp://127.0.0.1:*")
        configuration.retainedBytes = 256
        let publisher = try Bus(configuration)
        try await publisher.post(name: "big.one", payload: Array(repeating: 1, count: 300), retain: true)
        #expect(publisher.stats.ownRetainedEvictions == 1)
        try await publisher.post(name: "big.brief", payload: [1], retain: true, retainFor: .milliseconds(1))
        // A snapshot request after its retain-for passed finds it expired (monotonic clock).
        try await Task.sleep(for: .milliseconds(20))  // the expiry itself is what is tested: a time span, not readiness
        let subscriber = try Bus(.directSubscriber(connect: publisher.endpoints))
        let events = try subscriber.events(named: "big.>", retained: true)
        try await subscriber.ready("big.>")
        #expect(publisher.stats.ownRetainedExpirations == 1, "\(publisher.stats)")
        // Neither value is handed over: a live post is the first thing the subscription gets.
        try await publisher.post(name: "big.live", payload: [2])
        let first = await events.first(1)
        #expect(first.count == 1 && { if case .notification(let n) = first[0] { n.name.rawValue == "big.live" } else { false } }(), "\(first)")
        _ = await subscriber.close()
        _ = await publisher.close()
    }

    @Test("retainedNames and retainedBytes are validated")
    func validation() throws {
        var configuration = BusConfiguration.directPublisher(bind: "tcp://127.0.0.1:*")
        configuration.retainedNames = 0
        #expect(throws: BusError.self) { try configuration.validate() }
        configuration.retainedNames = 1
        configuration.retainedBytes = 0
        #expect(throws: BusError.self) { try configuration.validate() }
        configuration.retainedBytes = 1
        try configuration.validate()
    }
}
