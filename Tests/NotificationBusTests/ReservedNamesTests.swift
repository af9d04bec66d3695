import Testing
import ZeroMQ

@testable import NotificationBus
import TestSupport

// NBP-1 §15 reserves every name whose first token is `_nbus`, and §13 lets new control messages
// appear under it without a new version: a bus neither posts such a name nor delivers one.
@Suite("Reserved names: the first token _nbus", .timeLimit(.minutes(1)))
struct ReservedNamesTests {
    @Test("_nbus itself and names under it are reserved; _nbusy and x._nbus are not")
    func reservedFirstToken() throws {
        for text in ["_nbus", "_nbus.foo", "_nbus.ready.x"] {
            #expect(ControlNames.isReserved(try NotificationName(text)), "\(text)")
        }
        for text in ["_nbusy", "_nbusx.a", "x._nbus", "nbus"] {
            #expect(!ControlNames.isReserved(try NotificationName(text)), "\(text)")
        }
    }

    @Test("post refuses the bare _nbus (it used to be sent and delivered)")
    func postRefusesBareToken() async throws {
        let bus = try Bus(.embedded())
        await #expect(throws: BusError.reservedName(NotificationName("_nbus"))) {
            try await bus.post(name: "_nbus", payload: [1])
        }
        await bus.close()
    }

    @Test("a subscriber of '>' gets no unknown control message: _nbus.foo and _nbus are dropped and counted")
    func unknownControlNamesAreNotDelivered() async throws {
        let endpoint = try temporaryIPCEndpoint("control.sock")
        let context = try Context()
        defer { context.terminate() }
        let raw = try context.socket(.xpub)
        defer { raw.close() }
        try raw.set(.linger, .zero)
        try raw.set(.receiveTimeout, .milliseconds(10_000))
        try raw.bind(endpoint)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let everything = try subscriber.notifications(named: NamePattern(">"))
        // The pattern '>' subscribes the empty prefix: wait until the raw publisher has it.
        try raw.awaitSubscription([])
        for (index, name) in ["_nbus.foo", "_nbus", "x.end"].enumerated() {
            let notification = BusNotification(
                name: try NotificationName(name), sequence: UInt64(index + 1), publisherID: 7, timestamp: 1)
            try raw.send(try EnvelopeCodec.encode(notification))
        }
        let first = await everything.first(1).first
        #expect(first?.name.rawValue == "x.end", "a control message reached the application: \(String(describing: first))")
        #expect(subscriber.stats.unknownControlMessages == 2)
        await subscriber.close()
    }

    @Test("a batch carrying a control name is rejected as batchInvalid, never acted on nor dropped uncounted")
    func batchedControlNamesAreRejected() async throws {
        let endpoint = try temporaryIPCEndpoint("control-batch.sock")
        let context = try Context()
        defer { context.terminate() }
        let raw = try context.socket(.xpub)
        defer { raw.close() }
        try raw.set(.linger, .zero)
        try raw.set(.receiveTimeout, .milliseconds(10_000))
        try raw.bind(endpoint)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let everything = try subscriber.notifications(named: NamePattern(">"))
        try raw.awaitSubscription([])
        let publisher: UInt64 = 7
        func single(_ name: String, _ sequence: UInt64) throws -> [UInt8] {
            try EnvelopeCodec.encode(
                BusNotification(name: try NotificationName(name), sequence: sequence, publisherID: publisher, timestamp: 1))
        }
        // encodeBatch refuses control names (a producer never batches them): built under a name of
        // the same length, then its first byte made `_`.
        func controlBatch(_ name: String, payload: [UInt8] = [], records: Int) throws -> [UInt8] {
            let stand = try NotificationName("x" + name.dropFirst())
            var frame = try EnvelopeCodec.encodeBatch((1...records).map { index in
                BusNotification(name: stand, payload: payload, sequence: UInt64(index), publisherID: publisher, timestamp: 1)
            })
            frame[0] = UInt8(ascii: "_")
            return frame
        }
        // x.end 1; then an end of stream in a batch claiming x.end ran to 5 (applied, it would count
        // 4 lost and forget the stream), an unknown control name and a readiness echo, each batched;
        // then x.end 2, which must follow 1 with no gap.
        let endOfStream: [UInt8] = [5] + Array("x.end".utf8) + withUnsafeBytes(of: UInt64(5).bigEndian, Array.init)
        try raw.send(try single("x.end", 1))
        try raw.send(try controlBatch(ControlNames.endOfStreamName(publisher: publisher), payload: endOfStream, records: 1))
        try raw.send(try controlBatch("_nbus.foo", records: 2))
        try raw.send(try controlBatch("_nbus.ready.00000000000000aa.1", records: 3))
        try raw.send(try single("x.end", 2))
        let received = await everything.first(2)
        #expect(received.map(\.sequence) == [1, 2])
        #expect(received.allSatisfy { $0.name.rawValue == "x.end" })
        let stats = await subscriber.close()
        #expect(stats.rejected == [.batchInvalid: 3])
        #expect(stats.rejectedBatchNotifications == 6)
        #expect(stats.endOfStreamRecords == 0)
        #expect(stats.unknownControlMessages == 0)
        #expect(stats.lostUpstream == 0)
    }
}
