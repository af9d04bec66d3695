import NBP1
import Testing
import ZeroMQ
@testable import NotificationBus

/// Who acknowledges an end of stream, and whom a closing publisher waits for (NBP-1 §15): only
/// subscribers with a pattern matching a stream it closes. Issue 29, item 4: with every subscriber
/// acknowledging every record and every publisher waiting for every subscriber, 60 requesters
/// closing at once (each one also a subscriber, of its own reply name) made 85,000 pairs of
/// acknowledgements, which the broker sends to every publisher: each requester read 38,000
/// subscription messages and saw its own reply subscription 10 to 28 s late.
@Suite("End-of-stream acknowledgements: only where a closed stream could have gone")
struct EndOfStreamAcknowledgementScopeTests {
    private let me: UInt64 = 0xaa

    private func subscribe(_ topic: [UInt8]) -> [UInt8] { [1] + topic }
    private func presence(_ bus: UInt64, _ text: String) -> [UInt8] {
        ControlNames.presenceTopic(bus: bus, pattern: try! NamePattern(text))
    }

    @Test("Closing, a publisher waits for the subscribers a stream it closes matches, not the others")
    func publisherWaitsForMatchingSubscribers() throws {
        var machine = PublisherStateMachine(publisherID: me)
        for prefix in ["echo.", "_inbox.bb.", "_inbox.cc."] { _ = machine.received(subscribe(Array(prefix.utf8) + [0]), wallClock: 0) }
        _ = machine.received(subscribe(presence(0xdd, "echo.>")), wallClock: 0)  // the responder
        _ = machine.received(subscribe(presence(0xbb, "_inbox.bb.1")), wallClock: 0)  // other requesters
        _ = machine.received(subscribe(presence(0xcc, "_inbox.cc.1")), wallClock: 0)
        // Before the end of stream is made, every present subscriber counts (nothing closes yet).
        #expect(machine.awaitingAcknowledgement == [0xbb, 0xcc, 0xdd])
        let frames = machine.endOfStreamFrames(sequences: [NotificationName("echo.x"): 1], wallClock: 1)
        #expect(frames.count == 1)
        #expect(machine.awaitingAcknowledgement == [0xdd])
        #expect(machine.expectedAtClose == [0xdd])
        _ = machine.received(subscribe(ControlNames.endOfStreamAcknowledgement(publisher: me, subscriber: 0xdd)), wallClock: 2)
        #expect(machine.expectedAtClose.isEmpty)
    }

    private func receiver(patterns: [NamePattern]) throws -> BusReceiver {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100)
        for (index, pattern) in patterns.enumerated() {
            receiver.add(SubscriptionStorage(id: UInt64(index + 1), pattern: pattern, policy: .default, core: core))
        }
        return receiver
    }

    private func endOfStream(_ receiver: inout BusReceiver, publisher: UInt64, names: [String], final: Bool) throws {
        var payload: [UInt8] = []
        for name in names { payload += [UInt8(name.utf8.count)] + Array(name.utf8) + withUnsafeBytes(of: UInt64(7).bigEndian) { Array($0) } }
        let record = try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName(ControlNames.endOfStreamName(publisher: publisher)), payload: payload,
                headers: final ? ["final": "1"] : [:], sequence: 1, publisherID: publisher))
        record.withUnsafeBytes { receiver.deliverLocally($0) }
    }

    @Test("A subscriber acknowledges a record that closes a stream it subscribes to, and only that")
    func subscriberAcknowledgesMatchingRecords() throws {
        var receiver = try receiver(patterns: ["_inbox.aa.1"])
        try endOfStream(&receiver, publisher: 0xbb, names: ["echo.x"], final: true)
        #expect(receiver.takeEndOfStreamAcknowledgements().isEmpty, "another requester's request stream is none of its business")
        try endOfStream(&receiver, publisher: 0xdd, names: ["_inbox.aa.1"], final: true)
        #expect(receiver.takeEndOfStreamAcknowledgements() == [0xdd])
        // Records are still counted and applied either way.
        #expect(receiver.counters.endOfStreamRecords == 2)
    }

    @Test("A record in several parts is acknowledged at its final part when any part matched")
    func multiPartRecord() throws {
        var receiver = try receiver(patterns: ["orders.>"])
        try endOfStream(&receiver, publisher: 0xbb, names: ["orders.a"], final: false)
        #expect(receiver.takeEndOfStreamAcknowledgements().isEmpty)
        try endOfStream(&receiver, publisher: 0xbb, names: ["other.b"], final: true)
        #expect(receiver.takeEndOfStreamAcknowledgements() == [0xbb])
        // A repeat of the final part alone (the earlier part already acknowledged) does not match.
        try endOfStream(&receiver, publisher: 0xbb, names: ["other.b"], final: true)
        #expect(receiver.takeEndOfStreamAcknowledgements().isEmpty)
    }
}
