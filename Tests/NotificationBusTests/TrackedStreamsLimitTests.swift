import Testing
import ZeroMQ
@testable import NotificationBus

@Suite("A subscriber's table of (publisher, name) streams is bounded, and what it forgets is counted")
struct TrackedStreamsLimitTests {
    /// A receiver with one subscription to `s.>`, limited to `limit` tracked streams.
    private func receiver(limit: Int) throws -> BusReceiver {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: limit)
        receiver.add(SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .default, core: core))
        return receiver
    }

    private func deliver(_ receiver: inout BusReceiver, publisher: UInt64, sequence: UInt64) throws {
        let frame = try EnvelopeCodec.encode(
            BusNotification(name: NotificationName("s.data"), sequence: sequence, publisherID: publisher))
        frame.withUnsafeBytes { receiver.deliverLocally($0) }
    }

    @Test("Past the limit the least recently heard streams are forgotten, every one counted")
    func boundedAndCounted() throws {
        var receiver = try receiver(limit: 10)
        for publisher in 1...25 as ClosedRange<UInt64> { try deliver(&receiver, publisher: publisher, sequence: 1) }
        #expect(receiver.trackedStreams <= 10)
        #expect(Int(receiver.counters.streamsForgotten) + receiver.trackedStreams == 25)
        // The trade-off, documented on `maximumTrackedStreams`: a forgotten stream starts afresh,
        // so a jump in its sequence right after is not reported (its forgetting was counted).
        try deliver(&receiver, publisher: 1, sequence: 5)
        #expect(receiver.counters.lostUpstream == 0)
    }

    @Test("A stream heard recently is kept, so a loss on it is still counted exactly")
    func recentStreamKept() throws {
        var receiver = try receiver(limit: 10)
        var sequence: UInt64 = 1
        try deliver(&receiver, publisher: 1, sequence: sequence)
        for other in 100..<160 as Range<UInt64> {
            try deliver(&receiver, publisher: other, sequence: 1)
            if other % 3 == 0 {
                sequence += 1
                try deliver(&receiver, publisher: 1, sequence: sequence)
            }
        }
        #expect(receiver.counters.streamsForgotten > 0)
        try deliver(&receiver, publisher: 1, sequence: sequence + 3)  // two lost
        #expect(receiver.counters.lostUpstream == 2)
    }

    @Test("A closing publisher's end of stream still settles its streams after some were forgotten")
    func endOfStreamAfterForgetting() throws {
        var receiver = try receiver(limit: 4)
        for publisher in 1...9 as ClosedRange<UInt64> { try deliver(&receiver, publisher: publisher, sequence: 1) }
        // Publisher 9 is the most recent; it closes having sent 3 (2 and 3 never arrived).
        let payload = EndOfStream.payloads(for: [NotificationName("s.data"): 3])[0]
        let record = try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName(ControlNames.endOfStreamName(publisher: 9)), payload: payload,
                headers: ["final": "1"], sequence: 1, publisherID: 9))
        record.withUnsafeBytes { receiver.deliverLocally($0) }
        #expect(receiver.counters.lostUpstream == 2)
        #expect(receiver.counters.streamsForgotten + UInt64(receiver.trackedStreams) == 8)
    }
}
