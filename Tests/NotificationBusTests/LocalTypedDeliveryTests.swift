import Foundation
import NotificationBus
import Synchronization
import TestSupport
import Testing

// Issue 42, item 4: inside one process a typed post is handed over as the value, with no JSON;
// remote peers of the same bus still get JSON.

/// Counts how often the message was encoded and decoded by any coder, in this process.
private let localCodings = Atomic<Int>(0)

/// A five-field message whose `Codable` conformance counts every encode and decode.
private struct CountedOrder: BusAsyncMessage, Equatable {
    static let busName: NotificationName = "local.orders.counted"
    var id: Int
    var total: Double
    var customer: String
    var items: [String]
    var express: Bool

    init(id: Int, total: Double = 9.5, customer: String = "acme", items: [String] = ["a"], express: Bool = false) {
        (self.id, self.total, self.customer, self.items, self.express) = (id, total, customer, items, express)
    }

    private enum CodingKeys: String, CodingKey { case id, total, customer, items, express }

    init(from decoder: any Decoder) throws {
        localCodings.add(1, ordering: .relaxed)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        total = try container.decode(Double.self, forKey: .total)
        customer = try container.decode(String.self, forKey: .customer)
        items = try container.decode([String].self, forKey: .items)
        express = try container.decode(Bool.self, forKey: .express)
    }

    func encode(to encoder: any Encoder) throws {
        localCodings.add(1, ordering: .relaxed)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(total, forKey: .total)
        try container.encode(customer, forKey: .customer)
        try container.encode(items, forKey: .items)
        try container.encode(express, forKey: .express)
    }
}

/// An object that only exists in this process: it has no wire form.
private final class LocalHandle: Sendable {
    let label: String
    init(_ label: String) { self.label = label }
}

private struct NoWireForm: Error {}

/// A message that cannot be encoded (its `Codable` conformance throws both ways): in one process
/// it still travels, as the very same value.
private struct HandleMessage: BusAsyncMessage {
    static let busName: NotificationName = "local.handles"
    let handle: LocalHandle

    init(_ handle: LocalHandle) { self.handle = handle }
    init(from decoder: any Decoder) throws { throw NoWireForm() }
    func encode(to encoder: any Encoder) throws { throw NoWireForm() }
}

private enum CountedFamily: BusMessageFamily {
    case order(CountedOrder)
    static let busPattern: NamePattern = "local.orders.>"
    static let members: [any BusMessage.Type] = [CountedOrder.self]
    init?(member: any BusMessage) {
        guard let order = member as? CountedOrder else { return nil }
        self = .order(order)
    }
}

// Serialized: the coding counter is process-wide.
@Suite("Typed messages in one process: no coding", .serialized, .timeLimit(.minutes(1)))
struct LocalTypedDeliveryTests {
    @Test("An embedded bus hands a burst of typed posts to a sequence, an observer and a family uncoded")
    func embeddedNoCoding() async throws {
        let bus = try Bus(.embedded())
        let sequence = try bus.messages(of: CountedOrder.self)
        let family = try bus.messages(of: CountedFamily.self)
        let observed = Watched<[Int]>([])
        let token = try bus.addObserver(for: CountedOrder.self) { order in observed.update { $0.append(order.id) } }
        try await bus.ready(sequence.pattern)
        localCodings.store(0, ordering: .relaxed)
        let count = 500  // a burst: the loop merges runs of it into batch frames
        for id in 1...count { try await bus.post(CountedOrder(id: id)) }
        var received: [CountedOrder] = []
        for await order in sequence {
            received.append(order)
            if received.count == count { break }
        }
        var families = 0
        for await case .order(let order) in family {
            families += 1
            if order.id == count { break }
        }
        #expect(received == (1...count).map { CountedOrder(id: $0) })
        #expect(families == count)
        #expect(await observed.wait(until: { $0.count == count }))
        #expect(observed.value == Array(1...count))
        // Not one encode or decode: asserted by counters, the type's own and the bus's.
        #expect(localCodings.load(ordering: .relaxed) == 0)
        #expect(bus.stats.messagesEncoded == 0 && bus.stats.messagesDecoded == 0)
        #expect(sequence.stats.undecodable == 0 && token.stats.undecodable == 0)
        token.cancel()
        await bus.close()
    }

    @Test("A value with no wire form is delivered in the process as the same object, posted and postNow")
    func valueWithoutWireForm() async throws {
        let bus = try Bus(.embedded())
        let envelopes = try bus.messageEnvelopes(of: HandleMessage.self)
        try await bus.ready(envelopes.pattern)
        let first = LocalHandle("first"), second = LocalHandle("second")
        try await bus.post(HandleMessage(first), headers: ["k": "v"])
        try bus.postNow(HandleMessage(second))
        let received = await envelopes.first(2)
        try #require(received.count == 2)
        #expect(received[0].message.handle === first && received[1].message.handle === second)
        #expect(received[0].headers["k"] == "v" && received[0].sequence == 1 && received[1].sequence == 2)
        #expect(received[0].publisherID == bus.publisherID && received[0].notification.contentType == .json)
        #expect(received[0].notification.payload.isEmpty)  // no subscriber outside wanted JSON
        #expect(bus.stats.messagesEncoded == 0 && envelopes.stats.undecodable == 0)
        await bus.close()
    }

    @Test("Local typed observers get the value while a subscriber over tcp gets the JSON")
    func remotePeersStillGetJSON() async throws {
        let own = "inproc://local-typed-\(UInt64.random(in: 1...UInt64.max))"
        let publisher = try Bus(
            BusConfiguration(publish: [.bind(own), .bind("tcp://127.0.0.1:*")], subscribe: [.connect(own)]))
        let tcp = try #require(publisher.endpoints.first { $0.hasPrefix("tcp://") })
        let remote = try Bus(.directSubscriber(connect: [tcp]))
        let local = try publisher.messages(of: CountedOrder.self)
        let far = try remote.messageEnvelopes(of: CountedOrder.self)
        try await publisher.ready(local.pattern)
        try await remote.ready(far.pattern)
        localCodings.store(0, ordering: .relaxed)
        for id in 1...3 { try await publisher.post(CountedOrder(id: id, customer: "Zoë")) }
        let near = await local.first(3)
        let farAway = await far.first(3)
        #expect(near == (1...3).map { CountedOrder(id: $0, customer: "Zoë") })
        #expect(farAway.map(\.message) == near)
        // Encoded once per post for the wire, decoded once per post by the remote bus only.
        #expect(publisher.stats.messagesEncoded == 3 && publisher.stats.messagesDecoded == 0)
        #expect(remote.stats.messagesDecoded == 3)
        #expect(localCodings.load(ordering: .relaxed) == 6)
        let body = try #require(farAway.first?.notification.payload)
        #expect(String(decoding: body, as: UTF8.self).contains("\"customer\":\"Zoë\""))
        await remote.close()
        await publisher.close()
    }

    @Test("A byte subscription of the same bus gets the JSON of a typed post made without it")
    func byteSubscriberGetsJSON() async throws {
        let bus = try Bus(.embedded())
        let bytes = try bus.notifications(named: NamePattern(exactly: CountedOrder.busName))
        let typed = try bus.messages(of: CountedOrder.self)
        try await bus.ready(bytes.pattern)
        try await bus.post(CountedOrder(id: 7))
        let notification = try #require(await bytes.first(1).first)
        let decoded = try JSONDecoder().decode(CountedOrder.self, from: Data(notification.payload))
        #expect(decoded == CountedOrder(id: 7) && notification.contentType == .json)
        #expect(await typed.first(1) == [CountedOrder(id: 7)])
        #expect(bus.stats.messagesEncoded == 1 && bus.stats.messagesDecoded == 0)  // for the byte reader only
        await bus.close()
    }
}
