import NBP1
import NotificationBus
import TestSupport
import Testing
import ZeroMQ

/// docs/typed-messages.md's "On the wire": its vector is what the codec and `post(_:)` make, and
/// what a foreign producer sends that frame with reaches a typed observer.
@Suite("Typed messages on the wire", .timeLimit(.minutes(1)))
struct TypedWireVectorTests {
    struct OrderCreated: BusAsyncMessage, Equatable {
        static let busName: NotificationName = "orders.created"
        var id: Int
        var total: Double
    }

    /// The docs' hex, byte for byte.
    static let vector: [UInt8] = hex("""
        6f 72 64 65 72 73 2e 63 72 65 61 74 65 64 00 01
        00 02 0e 00 00 00 00 00 00 00 00 00 00 00 01 01
        02 03 04 05 06 07 08 17 97 9c fe 36 2a 00 00 7b
        22 69 64 22 3a 34 32 2c 22 74 6f 74 61 6c 22 3a
        39 2e 35 7d
        """)

    static func hex(_ text: String) -> [UInt8] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { UInt8($0, radix: 16) }
    }

    @Test("The vector is the codec's frame for OrderCreated(id: 42, total: 9.5) as JSON")
    func vectorMatchesCodec() throws {
        let payload = try OrderCreated.encodeBusPayload(OrderCreated(id: 42, total: 9.5))
        #expect(String(decoding: payload, as: UTF8.self) == #"{"id":42,"total":9.5}"#)
        let frame = try EnvelopeCodec.encode(BusNotification(
            name: OrderCreated.busName, payload: payload, contentType: .json, sequence: 1,
            publisherID: 0x0102_0304_0506_0708, timestamp: 1_700_000_000_000_000_000))
        #expect(frame == Self.vector)
        let decoded = try EnvelopeCodec.decode(frame: Self.vector)
        #expect(try OrderCreated.decodeBusPayload(decoded.payload) == OrderCreated(id: 42, total: 9.5))
    }

    final class Shipment: BusSubject, Sendable {
        let id: String
        init(_ id: String) { self.id = id }
        var busSubjectID: String { id }
    }

    struct OrderShipped: BusAsyncMessage, Equatable {
        typealias Subject = Shipment
        static let busName: NotificationName = "orders.shipped"
        var carrier: String
        var weight: Double
    }

    @Test("NBP-1's vector typed-message-subject is what post(_:subject:) sends, and decodes to the value")
    func protocolVectorMatchesPost() async throws {
        let vector = try #require(ProtocolVector.valid.first { $0.id == "typed-message-subject" })
        let frame = ProtocolVector.bytes(fromHex: try #require(vector.frames.first))
        let decoded = try EnvelopeCodec.decode(frame: frame)
        #expect(try OrderShipped.decodeBusPayload(decoded.payload) == OrderShipped(carrier: "dhl", weight: 1.5))
        #expect(decoded.contentType == .json && decoded.headers.isEmpty)

        // What a bus sends for the same value and subject: the vector's name and body.
        let publisher = try Bus(.directPublisher(bind: try temporaryIPCEndpoint()))
        let sub = try Context().socket(.sub)
        try sub.set(.receiveTimeout, .milliseconds(10_000))
        try sub.subscribe(Array("orders.shipped.".utf8))
        try sub.connect(publisher.endpoints[0])
        try await publisher.waitForSubscribers(matching: "orders.shipped.A-1042")
        try await publisher.post(OrderShipped(carrier: "dhl", weight: 1.5), subject: Shipment("A-1042"))
        let sent = try EnvelopeCodec.decode(frame: try sub.receive())
        #expect(sent.name == decoded.name && sent.payload == decoded.payload && sent.contentType == decoded.contentType)
        await publisher.close()
    }

    @Test("A foreign producer's raw frame reaches a typed observer; a bus's post carries the same body")
    func foreignFrameDecodes() async throws {
        let (raw, endpoint) = try rawPublisher()
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let envelopes = try subscriber.messageEnvelopes(of: OrderCreated.self)
        try raw.awaitSubscription(Array("orders.created".utf8) + [0])  // an exact pattern's prefix
        try raw.send(Self.vector)
        let received = try #require(await envelopes.first(1).first)
        #expect(received.message == OrderCreated(id: 42, total: 9.5))
        #expect(received.publisherID == 0x0102_0304_0506_0708 && received.sequence == 1)
        #expect(received.timestamp == 1_700_000_000_000_000_000)
        await subscriber.close()

        // The other way: what `post(_:)` sends, read by a raw SUB as a foreign consumer would.
        let publisher = try Bus(.directPublisher(bind: try temporaryIPCEndpoint()))
        let sub = try Context().socket(.sub)
        try sub.set(.receiveTimeout, .milliseconds(10_000))
        try sub.subscribe(Array("orders.created".utf8))
        try sub.connect(publisher.endpoints[0])
        try await publisher.waitForSubscribers(matching: OrderCreated.busName)
        try await publisher.post(OrderCreated(id: 42, total: 9.5))
        let frame = try sub.receive()
        let notification = try EnvelopeCodec.decode(frame: frame)
        #expect(notification.name == OrderCreated.busName && notification.contentType == .json)
        #expect(notification.payload == Array(Self.vector.suffix(21)) && notification.headers.isEmpty)
        await publisher.close()
    }
}
