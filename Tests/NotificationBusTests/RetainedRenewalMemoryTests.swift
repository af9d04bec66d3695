import NBP1
import Testing
import ZeroMQ

@testable import NotificationBus

/// A renewal (the snapshot asked again after a reconnection) never hands a subscription a value it
/// was handed before, even once the bus no longer tracks that value's stream (forgotten past
/// `maximumTrackedStreams` here; ended by its end of stream in `RetainedRenewalTests`, where a
/// loaded machine found it). Frames fed by hand, one path.
@Suite("Retained renewal remembers what each subscription was given")
struct RetainedRenewalMemoryTests {
    let core: BusCore
    var receiver: BusReceiver

    init() throws {
        core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 2)
        receiver.add(SubscriptionStorage(id: 1, pattern: "kept.>", policy: .default, core: core, retained: true))
    }

    func frame(_ name: String, _ sequence: UInt64, publisher: UInt64 = 3) throws -> [UInt8] {
        try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName(name), payload: [UInt8(sequence)], sequence: sequence, publisherID: publisher,
                flags: WireFormat.Flag.retain))
    }

    mutating func snapshot(token: UInt64, renewal: Bool, _ entries: [[UInt8]]) throws {
        let reply = try NotificationName(RetainedSnapshot.replyName(bus: 0xABC, token: token))
        receiver.expectSnapshot(subscriptionID: 1, pattern: "kept.>", replyName: reply, renewal: renewal)
        var queue = RetainedSnapshotQueue(publisherID: 9)
        let queued = queue.enqueue(reply: reply, entries: entries, takesAll: true, now: 0)
        #expect(queued)
        let bytes = try #require(queue.next)
        bytes.withUnsafeBytes { _ = receiver.receive($0, path: 0, now: 0) }
    }

    mutating func delivered() -> [String] {
        var events = receiver.routes[0].batch.events
        receiver.flush()
        var seen: [String] = []
        while let event = events.popFirst() {
            if case .notification(let n) = event { seen.append("\(n.name)=\(n.sequence)\(n.isRetained ? " retained" : "")") }
        }
        return seen
    }

    @Test("a value given before, of a stream no longer tracked, is a repeat on renewal; a new one is delivered")
    mutating func renewalAfterTrackingForgot() throws {
        try snapshot(token: 1, renewal: false, [try frame("kept.a", 1)])
        #expect(delivered() == ["kept.a=1 retained"])
        // Other streams push kept.a's tracking out (two tracked at most).
        for publisher in 10...20 as ClosedRange<UInt64> {
            try frame("kept.other", 1, publisher: publisher).withUnsafeBytes { _ = receiver.receive($0, path: 0, now: 0) }
        }
        _ = delivered()
        try snapshot(token: 2, renewal: true, [try frame("kept.a", 1), try frame("kept.b", 4)])
        #expect(delivered() == ["kept.b=4 retained"])
        #expect(receiver.counters.retainedRepeats == 1)
    }
}
