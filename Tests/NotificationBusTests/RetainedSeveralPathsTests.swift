import NBP1
import Testing
import ZeroMQ

@testable import NotificationBus

/// Issue 39 ("two brokers: the live stream held back behind a kept value"): a subscriber with two
/// paths (NBP-1 §17) whose snapshot entry arrives after the other broker's live copy. Frames fed
/// by hand (no sockets, no clock): what the merge holds, what it has handed on, and the entry.
@Suite("Retained values over two paths: before the live stream it holds, never after a newer one")
struct RetainedSeveralPathsTests {
    let core: BusCore
    var receiver: BusReceiver
    let storage: SubscriptionStorage
    let reply: NotificationName

    init() throws {
        core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100, paths: 2, gapTimeout: .seconds(2))
        storage = SubscriptionStorage(id: 1, pattern: "kept.>", policy: .default, core: core, retained: true)
        receiver.add(storage)
        reply = try NotificationName(RetainedSnapshot.replyName(bus: 0xABC, token: 1))
        receiver.expectSnapshot(subscriptionID: 1, pattern: "kept.>", replyName: reply)
    }

    func live(_ sequence: UInt64) throws -> [UInt8] {
        try EnvelopeCodec.encode(
            BusNotification(name: "kept.a", payload: [UInt8(sequence)], sequence: sequence, publisherID: 3, flags: WireFormat.Flag.retain))
    }

    /// The one frame of a snapshot holding the kept value at `sequence`.
    func snapshot(_ sequence: UInt64) throws -> [UInt8] {
        var queue = RetainedSnapshotQueue(publisherID: 9)
        #expect(queue.enqueue(reply: reply, entries: [try live(sequence)], takesAll: true, now: 0))
        return try #require(queue.next)
    }

    mutating func feed(_ frame: [UInt8], path: Int) {
        frame.withUnsafeBytes { receiver.receive($0, path: path, now: 0) }
    }

    /// The stream's start wait (1 s) passes: what it held from its oldest on is handed on.
    mutating func settle() {
        receiver.settleMergedStreams(now: 10_000_000_000)
    }

    /// What was handed to the subscription since the last call: sequence, and whether retained.
    mutating func delivered() -> [String] {
        var events = receiver.routes[0].batch.events
        receiver.flush()
        var seen: [String] = []
        while let event = events.popFirst() {
            if case .notification(let n) = event { seen.append("\(n.sequence)\(n.isRetained ? " retained" : "")") }
        }
        return seen
    }

    @Test("the other broker's live copy came first and the stream started: the older kept value is not handed over after it")
    mutating func keptValueAfterANewerLiveOne() throws {
        feed(try live(6), path: 1)
        feed(try live(6), path: 0)
        settle()  // the stream starts at 6
        #expect(delivered() == ["6"])
        feed(try snapshot(5), path: 0)
        #expect(delivered() == [])
        #expect(receiver.counters.retainedSuperseded == 1)
        #expect(receiver.counters.retainedReceived == 0)
        #expect(receiver.counters.lostUpstream == 0)
    }

    @Test("the stream reached this bus live, for another subscription, before this one was made: its kept value is handed over")
    func keptValueOfAStreamStartedBefore() throws {
        // A receiver of its own: an earlier subscription takes the live stream first.
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100, paths: 2, gapTimeout: .seconds(2))
        receiver.add(SubscriptionStorage(id: 2, pattern: "kept.>", policy: .default, core: core))
        for path in [1, 0] { try live(6).withUnsafeBytes { receiver.receive($0, path: path, now: 0) } }
        receiver.settleMergedStreams(now: 10_000_000_000)
        receiver.add(SubscriptionStorage(id: 1, pattern: "kept.>", policy: .default, core: core, retained: true))
        receiver.expectSnapshot(subscriptionID: 1, pattern: "kept.>", replyName: reply)
        try snapshot(6).withUnsafeBytes { receiver.receive($0, path: 0, now: 0) }
        let later = try #require(receiver.routes.firstIndex { $0.storage.id == 1 })
        var events = receiver.routes[later].batch.events
        var seen: [String] = []
        while let event = events.popFirst() {
            if case .notification(let n) = event { seen.append("\(n.sequence)\(n.isRetained ? " retained" : "")") }
        }
        #expect(seen == ["6 retained"], "the current value, though the bus had handed 6 on before")
        #expect(receiver.counters.retainedSuperseded == 0)
        #expect(receiver.counters.retainedReceived == 1)
    }

    @Test("a slower broker's live copy of a value one subscription got as retained still reaches the others")
    func slowerLiveCopyReachesTheOthers() throws {
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100, paths: 2, gapTimeout: .seconds(2))
        receiver.add(SubscriptionStorage(id: 1, pattern: "kept.>", policy: .default, core: core, retained: true))
        receiver.add(SubscriptionStorage(id: 2, pattern: "kept.>", policy: .default, core: core))
        receiver.expectSnapshot(subscriptionID: 1, pattern: "kept.>", replyName: reply)
        for (frame, path) in [(try live(6), 1), (try snapshot(5), 0), (try live(5), 0), (try live(6), 0)] {
            frame.withUnsafeBytes { receiver.receive($0, path: path, now: 0) }
        }
        receiver.settleMergedStreams(now: 10_000_000_000)
        func seen(_ id: UInt64) -> [String] {
            guard let index = receiver.routes.firstIndex(where: { $0.storage.id == id }) else { return [] }
            var events = receiver.routes[index].batch.events
            var result: [String] = []
            while let event = events.popFirst() {
                switch event {
                case .notification(let n): result.append("\(n.sequence)\(n.isRetained ? " retained" : "")")
                case .gap(let gap): result.append("gap \(gap.count)")
                }
            }
            return result
        }
        #expect(seen(1) == ["5 retained", "6"], "the retained one: 5 once, as retained")
        #expect(seen(2) == ["5", "6"], "the other: 5 live, from the slower broker, not lost")
        #expect(receiver.counters.lostUpstream == 0)
        #expect(receiver.retainedHandedOver.isEmpty)
    }

    @Test("the other broker's live copy came first and is held for the stream's start: the kept value comes before it")
    mutating func keptValueBeforeAHeldLiveOne() throws {
        feed(try live(6), path: 1)  // held: path 0 has brought nothing of the stream yet
        feed(try snapshot(5), path: 0)
        #expect(delivered() == ["5 retained"])
        feed(try live(6), path: 0)
        settle()
        #expect(delivered() == ["6"])
        #expect(receiver.counters.lostUpstream == 0)
    }

    @Test("the kept value's own sequence is held as a live copy: handed on once, as live")
    mutating func keptValueHeldAsLive() throws {
        feed(try live(5), path: 1)  // held
        feed(try snapshot(5), path: 0)
        #expect(delivered() == [])
        #expect(receiver.counters.retainedSuperseded == 1)
        feed(try live(5), path: 0)
        settle()
        #expect(delivered() == ["5"])
    }

    @Test("a slower broker's live copy of the kept value handed over comes later: discarded, not handed on twice")
    mutating func slowerLiveCopyOfTheKeptValue() throws {
        feed(try live(6), path: 1)  // held
        feed(try snapshot(5), path: 0)
        #expect(delivered() == ["5 retained"])
        feed(try live(5), path: 0)  // the same value, live, from the slower broker
        feed(try live(6), path: 0)
        settle()
        #expect(delivered() == ["6"])
        #expect(receiver.counters.duplicatesDiscarded >= 1)
        #expect(receiver.counters.lostUpstream == 0)
        // The merge covers 5 now: the value is forgotten, the merge discards later copies itself.
        feed(try live(7), path: 1)
        #expect(receiver.retainedHandedOver.isEmpty)
        feed(try live(5), path: 1)
        #expect(delivered() == ["7"])
    }
}
