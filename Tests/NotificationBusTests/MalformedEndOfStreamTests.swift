import NBP1
import Testing
import ZeroMQ
@testable import NotificationBus

/// NBP-1 §15.1: an end-of-stream payload that breaks off at a malformed entry applies the entries
/// before it, and the receiver counts the record (a tail the rest would have reported is lost).
@Suite("A malformed end-of-stream payload is applied up to the fault and counted")
struct MalformedEndOfStreamTests {
    private func receiver() throws -> BusReceiver {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100)
        receiver.add(SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .default, core: core))
        return receiver
    }

    private func deliver(_ receiver: inout BusReceiver, _ name: String, sequence: UInt64) throws {
        let frame = try EnvelopeCodec.encode(
            BusNotification(name: NotificationName(name), sequence: sequence, publisherID: 5))
        frame.withUnsafeBytes { receiver.deliverLocally($0) }
    }

    private func endOfStream(_ receiver: inout BusReceiver, payload: [UInt8]) throws {
        let record = try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName(ControlNames.endOfStreamName(publisher: 5)), payload: payload,
                headers: ["final": "1"], sequence: 1, publisherID: 5))
        record.withUnsafeBytes { receiver.deliverLocally($0) }
    }

    /// One well-formed entry of the payload.
    private func entry(_ name: String, _ last: UInt64) -> [UInt8] {
        [UInt8(name.utf8.count)] + Array(name.utf8) + withUnsafeBytes(of: last.bigEndian) { Array($0) }
    }

    @Test(
        "Cut short, an empty name, an invalid name: the entries before apply, the record is counted",
        arguments: [
            [5, 0x73, 0x2E, 0x62],  // "s.b" announced as 5 bytes, cut short
            [0] + [UInt8](repeating: 0, count: 8),  // an empty name
            [5] + Array("s..bb".utf8) + [UInt8](repeating: 0, count: 8),  // a name NBP/1 refuses
            [3] + [0x73, 0x2E, 0xFF] + [UInt8](repeating: 0, count: 8),  // not UTF-8
        ] as [[UInt8]])
    func malformedTail(tail: [UInt8]) throws {
        var receiver = try receiver()
        try deliver(&receiver, "s.a", sequence: 1)
        try deliver(&receiver, "s.b", sequence: 1)
        // s.a closed at 4: 3 lost; the malformed entry after it (about s.b) cannot be applied.
        try endOfStream(&receiver, payload: entry("s.a", 4) + tail)
        #expect(receiver.counters.lostUpstream == 3)
        #expect(receiver.counters.malformedEndOfStreamRecords == 1)
        #expect(receiver.counters.endOfStreamRecords == 1)
    }

    @Test("A well-formed record is not counted as malformed")
    func wellFormed() throws {
        var receiver = try receiver()
        try deliver(&receiver, "s.a", sequence: 1)
        try deliver(&receiver, "s.b", sequence: 2)
        try endOfStream(&receiver, payload: entry("s.a", 2) + entry("s.b", 4))
        #expect(receiver.counters.lostUpstream == 3)
        #expect(receiver.counters.malformedEndOfStreamRecords == 0)
        #expect(EndOfStream.parse(entry("s.a", 2)).malformed == false)
        #expect(EndOfStream.parse([]).entries.isEmpty && !EndOfStream.parse([]).malformed)
    }
}

/// Issue "Hostile and careless peers, round 2", item 3: a peer replaying a stream's sequence
/// numbers (a forged frame reusing a live publisher id) never makes the bus deliver a sequence
/// twice; every repeat is counted.
@Suite("A replayed sequence is never delivered twice, and counted")
struct ReplayedSequenceTests {
    @Test("one path: sequences 1-50 replayed after 1-100 are all discarded and counted; 101 still arrives")
    func replayDiscarded() throws {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100)
        let storage = SubscriptionStorage(id: 1, pattern: NamePattern("r.>"), policy: .default, core: core)
        receiver.add(storage)
        func deliver(_ sequence: UInt64, _ count: Int = 1) throws {
            for offset in 0..<UInt64(count) {
                let frame = try EnvelopeCodec.encode(
                    BusNotification(name: NotificationName("r.a"), sequence: sequence + offset, publisherID: 9))
                frame.withUnsafeBytes { receiver.deliverLocally($0) }
            }
        }
        try deliver(1, 100)
        try deliver(1, 50)
        try deliver(101)
        _ = receiver.flush()
        #expect(receiver.counters.duplicatesDiscarded == 50)
        #expect(receiver.counters.lostUpstream == 0)
        #expect(storage.stats.received == 101, "\(storage.stats)")
    }
}
