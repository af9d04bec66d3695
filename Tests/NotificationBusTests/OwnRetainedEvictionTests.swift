import Logging
import NBP1
import TestSupport
import Testing
import ZeroMQ

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
        // On a loaded machine the publisher's loop may still be sending the posts when the
        // subscriber connects: those reach it live, unmarked, before the snapshot, and the
        // snapshot's entries of names it already has as new are skipped (NBP-1 §18, counted as
        // superseded; `liveBeforeSnapshotSupersedes` below). Either way it ends with each kept
        // name's current value, retained or live: that is what is waited for, bounded.
        let (latest, retainedNames, received) = try await withTimeout(.seconds(30), "the kept names' current values") {
            var latest: [String: [UInt8]] = [:]
            var retainedNames: [String] = []
            var received: [BusEvent] = []
            for await event in events {
                received.append(event)
                guard case .notification(let n) = event else { continue }
                latest[n.name.rawValue] = n.payload
                if n.isRetained { retainedNames.append(n.name.rawValue) }
                if (13...19).allSatisfy({ latest["own.k\($0)"] == [UInt8($0)] }) && latest["own.k20"] == [99] { break }
            }
            return (latest, retainedNames, received)
        }
        #expect((13...19).allSatisfy { latest["own.k\($0)"] == [UInt8($0)] } && latest["own.k20"] == [99], "\(received)")
        // Only kept values come marked retained, each once.
        #expect(Set(retainedNames).isSubset(of: Set((13...20).map { "own.k\($0)" })), "\(received)")
        #expect(retainedNames.count == Set(retainedNames).count, "\(received)")
        #expect(await lines.wait { $0.contains { $0.message.contains("evicted a retained value (own.k1)") } }, "\(lines.value)")

        for index in 21...23 { try await publisher.post(name: "own.k\(index)", payload: [UInt8(index)], retain: true) }
        let stats = await publisher.close()
        #expect(stats.ownRetainedEvictions == 15 && stats.ownRetainedExpirations == 0, "\(stats)")
        // Logged once, however many followed.
        #expect(lines.value.filter { $0.message.contains("evicted a retained value") }.count == 1, "\(lines.value)")
        // Each of the 8 kept values was either handed over or skipped for a live one as new.
        let subscriberStats = await subscriber.close()
        #expect(subscriberStats.retainedReceived + subscriberStats.retainedSuperseded == 8, "\(subscriberStats)")
        #expect(subscriberStats.retainedReceived == UInt64(retainedNames.count), "\(subscriberStats)")
    }

    @Test("Posts that reach a subscriber live before its snapshot supersede the snapshot's entries: nothing marked retained comes")
    func liveBeforeSnapshotSupersedes() throws {
        // The interleaving `evictionsAreCounted` meets on a loaded machine, fed by hand (one path,
        // no sockets): the subscription asks, the publisher's loop sends its queued posts (the
        // subscription is in place at its XPUB by then), then answers the request.
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100, paths: 1, gapTimeout: .seconds(2))
        let storage = SubscriptionStorage(id: 1, pattern: "own.>", policy: .default, core: core, retained: true)
        receiver.add(storage)
        let reply = try NotificationName(RetainedSnapshot.replyName(bus: 0xABC, token: 1))
        receiver.expectSnapshot(subscriptionID: 1, pattern: "own.>", replyName: reply)
        func post(_ index: Int, payload: UInt8, sequence: UInt64) throws -> [UInt8] {
            try EnvelopeCodec.encode(
                BusNotification(
                    name: try NotificationName("own.k\(index)"), payload: [payload], sequence: sequence, publisherID: 7,
                    flags: WireFormat.Flag.retain))
        }
        for index in 1...20 { try post(index, payload: UInt8(index), sequence: 1).withUnsafeBytes { receiver.receive($0, path: 0, now: 0) } }
        try post(20, payload: 99, sequence: 2).withUnsafeBytes { receiver.receive($0, path: 0, now: 0) }
        var queue = RetainedSnapshotQueue(publisherID: 7)
        let entries = try (13...19).map { try post($0, payload: UInt8($0), sequence: 1) } + [try post(20, payload: 99, sequence: 2)]
        let enqueued = queue.enqueue(reply: reply, entries: entries, takesAll: false, now: 0)
        #expect(enqueued)
        while let frame = queue.next {
            frame.withUnsafeBytes { receiver.receive($0, path: 0, now: 0) }
            _ = queue.sent()
        }
        var events = receiver.routes[0].batch.events
        receiver.flush()
        var live = 0
        var retained = 0
        while let event = events.popFirst() {
            if case .notification(let n) = event { if n.isRetained { retained += 1 } else { live += 1 } }
        }
        // All 21 posts live, none of the 8 entries: a wait for 8 retained names would never end.
        #expect(live == 21 && retained == 0)
        #expect(receiver.counters.retainedSuperseded == 8 && receiver.counters.retainedReceived == 0)
        #expect(receiver.takeEndedSnapshots().count == 1)
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
        // Neither value is handed over: nothing marked retained comes before a live post. (On a
        // loaded machine the loop may send the two posts only once the subscriber is there: they
        // then come live, unmarked, as in `evictionsAreCounted`.)
        try await publisher.post(name: "big.live", payload: [2])
        let received = await events.collect { if case .notification(let n) = $0 { n.name.rawValue == "big.live" } else { false } }
        let names = received.compactMap { event -> String? in
            if case .notification(let n) = event { return "\(n.name)\(n.isRetained ? " retained" : "")" }
            return nil
        }
        #expect(names.last == "big.live" && !names.contains { $0.hasSuffix(" retained") }, "\(received)")
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
