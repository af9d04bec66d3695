import Testing
import ZeroMQ
@testable import NotificationBus

/// Issue 29, item 1: a stream first seen past sequence 1 is no loss (NBP-1 §8: a late join looks the
/// same as a head lost before the subscriber heard of the stream), but it is counted, so a head
/// that never arrived is said somewhere (`BusStats.streamsJoinedLate`, `notificationsBeforeJoining`).
@Suite("A stream first seen past its start is counted, not reported as a loss")
struct JoinedLateTests {
    private func receiver() throws -> BusReceiver {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .default, core: core))
        return receiver
    }

    private func deliver(_ receiver: inout BusReceiver, publisher: UInt64, name: String = "s.data", sequence: UInt64) throws {
        let frame = try EnvelopeCodec.encode(
            BusNotification(name: NotificationName(name), sequence: sequence, publisherID: publisher))
        frame.withUnsafeBytes { receiver.deliverLocally($0) }
        receiver.flush()
    }

    @Test("First seen at 17,221: one stream joined late, 17,220 before it, nothing lost; seen from 1: nothing")
    func counted() throws {
        var receiver = try receiver()
        try deliver(&receiver, publisher: 1, sequence: 1)
        try deliver(&receiver, publisher: 1, sequence: 2)
        #expect(receiver.counters.streamsJoinedLate == 0 && receiver.counters.notificationsBeforeJoining == 0)
        try deliver(&receiver, publisher: 2, sequence: 17_221)
        try deliver(&receiver, publisher: 2, sequence: 17_222)
        // Another name of the same publisher is another stream (the cached stream is spilled between).
        try deliver(&receiver, publisher: 2, name: "s.other", sequence: 4)
        try deliver(&receiver, publisher: 2, sequence: 17_225)
        #expect(receiver.counters.streamsJoinedLate == 2)
        #expect(receiver.counters.notificationsBeforeJoining == 17_220 + 3)
        // Only the jump inside a tracked stream is a loss.
        #expect(receiver.counters.lostUpstream == 2)
    }

    @Test("Streams first seen at the largest sequence saturate the count instead of trapping the process")
    func saturates() throws {
        var receiver = try receiver()
        // A conformance vector's two streams at 2^64 - 1 overflowed the sum: nbus subscribe trapped.
        try deliver(&receiver, publisher: 7, sequence: .max)
        try deliver(&receiver, publisher: 8, sequence: .max)
        #expect(receiver.counters.streamsJoinedLate == 2)
        #expect(receiver.counters.notificationsBeforeJoining == .max)
    }
}
