import Foundation
import NotificationBus
import TestSupport
import Testing

// The Codable-free JSON path: a message type that writes and reads its own fields
// (`BusJSON.writeObject` / `readObject`) makes the bytes its synthesized `Codable` conformance
// makes, reads the other path's output and any RFC 8259 producer's, and what does not decode is
// counted per type as before.

struct FieldsAddress: Codable, Equatable, BusJSONWritable, BusJSONReadable {
    var street: String
    var zip: Int?

    func writeBusJSON(to writer: inout BusJSONValueWriter) throws {
        try writer.writeObject { object in
            object.field("street", street)
            try object.field("zip", zip)
        }
    }

    init(street: String, zip: Int?) {
        self.street = street
        self.zip = zip
    }

    init(busJSON reader: BusJSONValueReader) throws {
        let object = try reader.object()
        street = try object.field("street")
        zip = try object.field("zip")
    }
}

/// Every kind of field the API writes directly, plus one through `Codable` (`tier`).
struct FieldsOrder: BusAsyncMessage, Equatable {
    enum Tier: String, Codable { case gold, silver }

    static let busName: NotificationName = "fields.orders.created"
    var id: Int
    var total: Double
    var customer: String
    var items: [String]
    var express: Bool?
    var quantities: [Int8]
    var ratio: Float
    var big: UInt64
    var placed: Date
    var blob: Data
    var link: URL
    var price: Decimal
    var address: FieldsAddress
    var history: [FieldsAddress]
    var maybe: [Int?]
    var tier: Tier

    static func encodeBusPayload(_ message: Self) throws -> [UInt8] {
        try BusJSON.writeObject { object in
            object.field("id", message.id)
            try object.field("total", message.total)
            object.field("customer", message.customer)
            object.field("items", message.items)
            try object.field("express", message.express)
            try object.field("quantities", message.quantities)
            try object.field("ratio", message.ratio)
            try object.field("big", message.big)
            try object.field("placed", message.placed)
            try object.field("blob", message.blob)
            try object.field("link", message.link)
            try object.field("price", message.price)
            try object.field("address", message.address)
            try object.field("history", message.history)
            try object.field("maybe", message.maybe)
            try object.field("tier", encoding: message.tier)
        }
    }

    static func decodeBusPayload(_ payload: [UInt8]) throws -> Self {
        let object = try BusJSON.readObject(payload)
        return FieldsOrder(
            id: try object.field("id"), total: try object.field("total"), customer: try object.field("customer"),
            items: try object.field("items"), express: try object.field("express"),
            quantities: try object.field("quantities"), ratio: try object.field("ratio"), big: try object.field("big"),
            placed: try object.field("placed"), blob: try object.field("blob"), link: try object.field("link"),
            price: try object.field("price"), address: try object.field("address"), history: try object.field("history"),
            maybe: try object.field("maybe"), tier: try object.field("tier", decoding: Tier.self))
    }
}

/// The same fields through the synthesized `Codable` conformance (the default coding).
struct FieldsOrderCodable: Codable, Equatable {
    var id: Int
    var total: Double
    var customer: String
    var items: [String]
    var express: Bool?
    var quantities: [Int8]
    var ratio: Float
    var big: UInt64
    var placed: Date
    var blob: Data
    var link: URL
    var price: Decimal
    var address: FieldsAddress
    var history: [FieldsAddress]
    var maybe: [Int?]
    var tier: FieldsOrder.Tier

    init(_ order: FieldsOrder) {
        id = order.id; total = order.total; customer = order.customer; items = order.items; express = order.express
        quantities = order.quantities; ratio = order.ratio; big = order.big; placed = order.placed; blob = order.blob
        link = order.link; price = order.price; address = order.address; history = order.history; maybe = order.maybe
        tier = order.tier
    }
}

private func order(_ id: Int, express: Bool? = nil, customer: String = "Acme Corporation", total: Double = 9.5) -> FieldsOrder {
    FieldsOrder(
        id: id, total: total, customer: customer, items: ["widget", "gad/get"], express: express, quantities: [1, -128, 127],
        ratio: 0.1, big: .max, placed: Date(timeIntervalSinceReferenceDate: 786_000_123.25), blob: Data([0, 1, 250]),
        link: URL(string: "https://example.com/a?q=1")!, price: Decimal(string: "12.345")!,
        address: FieldsAddress(street: "1 Main St", zip: nil), history: [FieldsAddress(street: "x", zip: 75001)],
        maybe: [1, nil, 3], tier: .gold)
}

@Suite("BusJSON field coding (Codable-free)", .timeLimit(.minutes(1)))
struct BusJSONFieldsTests {
    @Test("The field path writes the bytes Codable writes, and each path reads the other's")
    func sameBytesBothWays() throws {
        let values = [
            order(1), order(-7, express: true, customer: "", total: 1e-3),
            order(Int.max, express: false, customer: "quote \" backslash \\ tab \t nul \u{0} é 中文 😀", total: 123456789.125),
            order(Int.min, customer: "«Zoë»", total: -0.0), order(0, total: 1e20), order(3, total: 5e-324),
        ]
        for value in values {
            let fields = try FieldsOrder.encodeBusPayload(value)
            let codable = try BusJSON.encode(FieldsOrderCodable(value))
            #expect(fields == codable, "\(String(decoding: fields, as: UTF8.self)) vs \(String(decoding: codable, as: UTF8.self))")
            // Each path reads the other's output; Foundation's encoder's too.
            #expect(try FieldsOrder.decodeBusPayload(codable) == value)
            #expect(try BusJSON.decode(FieldsOrderCodable.self, from: fields) == FieldsOrderCodable(value))
            let foundation = Array(try JSONEncoder().encode(FieldsOrderCodable(value)))
            #expect(try FieldsOrder.decodeBusPayload(foundation) == value)
        }
    }

    @Test("Python's json.dumps output decodes: spaces, \\u escapes, null, other key order, extra keys")
    func foreignJSON() throws {
        // What `json.dumps` writes (default separators, ensure_ascii) for a dict in another order.
        let python = #"""
            {"tier": "silver", "maybe": [null], "history": [], "address": {"zip": 75001, "street": "r\u00fce"}, \#
            "price": 2.5, "link": "https://example.com/", "blob": "AAE=", "placed": 0.5, "big": 18446744073709551615, \#
            "ratio": 1.5, "quantities": [], "express": null, "items": ["w/x", "\u00e9"], "extra": {"a": [1]}, \#
            "customer": "Zo\u00eb \u00abAcme\u00bb", "total": 2.25, "id": 7}
            """#
        let value = try FieldsOrder.decodeBusPayload(Array(python.utf8))
        #expect(value.id == 7 && value.total == 2.25 && value.customer == "Zoë «Acme»" && value.items == ["w/x", "é"])
        #expect(value.express == nil && value.address == FieldsAddress(street: "rüe", zip: 75001) && value.tier == .silver)
        #expect(value.maybe == [nil] && value.big == .max && value.blob == Data([0, 1]) && value.price == Decimal(2.5))
    }

    @Test("Missing, mistyped, out-of-range and malformed JSON throw a DecodingError with the path")
    func decodingErrors() throws {
        func failure(_ json: String) -> DecodingError? {
            do {
                _ = try FieldsOrder.decodeBusPayload(Array(json.utf8))
                return nil
            } catch let error as DecodingError {
                return error
            } catch {
                Issue.record("not a DecodingError: \(error)")
                return nil
            }
        }
        var good = String(decoding: try FieldsOrder.encodeBusPayload(order(1)), as: UTF8.self)
        if case .keyNotFound(let key, _) = failure(good.replacingOccurrences(of: #""id":1,"#, with: "")) {
            #expect(key.stringValue == "id")
        } else {
            Issue.record("a missing id")
        }
        if case .typeMismatch(_, let context) = failure(good.replacingOccurrences(of: #""id":1"#, with: #""id":"one""#)) {
            #expect(context.codingPath.map(\.stringValue) == ["id"])
        } else {
            Issue.record("a string id")
        }
        if case .dataCorrupted(let context) = failure(good.replacingOccurrences(of: "[1,-128,127]", with: "[1,-129]")) {
            #expect(context.codingPath.map(\.stringValue) == ["quantities", "Index 1"])
        } else {
            Issue.record("an Int8 out of range")
        }
        if case .valueNotFound(_, let context) = failure(good.replacingOccurrences(of: #""street":"1 Main St""#, with: #""street":null"#)) {
            #expect(context.codingPath.map(\.stringValue) == ["address", "street"])
        } else {
            Issue.record("a null street")
        }
        #expect(failure(String(good.dropLast())) != nil)  // malformed
        #expect(failure("[1]") != nil)  // not an object
        #expect(failure("") != nil)
        good = good.replacingOccurrences(of: #""tier":"gold""#, with: #""tier":"bronze""#)
        #expect(failure(good) != nil)  // the Codable fallback's own refusal
    }

    @Test("A non-finite number is refused when writing, as Codable refuses it")
    func nonFinite() {
        #expect(throws: EncodingError.self) { try FieldsOrder.encodeBusPayload(order(1, total: .nan)) }
        #expect(throws: EncodingError.self) { try BusJSON.writeObject { try $0.field("x", [Double.infinity]) } }
    }

    @Test("Nested objects and arrays written in place; a place left empty is refused")
    func nestedInPlace() throws {
        let bytes = try BusJSON.writeObject { object in
            try object.field("point") { value in
                try value.writeObject { point in
                    point.field("x", 1)
                    try point.field("y", 2.5)
                }
            }
            try object.field("list") { value in
                try value.writeArray { array in
                    try array.element("a")
                    try array.element { try $0.writeNull() }
                }
            }
        }
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"point":{"x":1,"y":2.5},"list":["a",null]}"#)
        let object = try BusJSON.readObject(bytes)
        let point = try object.value("point").object()
        #expect(try point.field("x", as: Int.self) == 1 && point.field("y", as: Double.self) == 2.5 && point.count == 2)
        let list = try object.value("list").array()
        #expect(try list.count == 2 && list[0].read(String.self) == "a" && list[1].isNull)
        #expect(throws: EncodingError.self) { try BusJSON.writeObject { try $0.field("empty") { _ in } } }
    }

    @Test("Through a real bus: fast-path posts arrive intact; a Codable type reads them; bad JSON is counted per type")
    func throughBus() async throws {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let subscriber = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let events = try subscriber.messageEvents(of: FieldsOrder.self)
        let raw = try subscriber.notifications(named: NamePattern(exactly: FieldsOrder.busName))
        try await subscriber.ready(events.pattern)
        let first = order(1, express: true)
        let good = try FieldsOrder.encodeBusPayload(order(4))
        try await publisher.post(first)
        try await publisher.post(name: FieldsOrder.busName, payload: Array(#"{"id":2,"total":"#.utf8), contentType: .json)
        var mistyped = String(decoding: good, as: UTF8.self).replacingOccurrences(of: #""id":4"#, with: #""id":"three""#)
        try await publisher.post(name: FieldsOrder.busName, payload: Array(mistyped.utf8), contentType: .json)
        mistyped = String(decoding: good, as: UTF8.self).replacingOccurrences(of: #""tier":"gold""#, with: #""tier":7"#)
        try await publisher.post(name: FieldsOrder.busName, payload: Array(mistyped.utf8), contentType: .json)
        try await publisher.post(name: FieldsOrder.busName, payload: good, contentType: .json)

        let seen = await events.first(5)
        #expect(seen.count == 5)
        var decoded: [FieldsOrder] = []
        var undecodable = 0
        for event in seen {
            switch event {
            case .message(let envelope): decoded.append(envelope.message)
            case .undecodable(_, let error):
                #expect(error.type == "FieldsOrder")
                undecodable += 1
            default: Issue.record("unexpected \(event)")
            }
        }
        #expect(decoded == [first, order(4)] && undecodable == 3)
        #expect(events.stats.undecodable == 3)
        // The typed post's bytes on the wire are the Codable path's.
        let wire = try #require(await raw.first(1).first)
        let codable = try BusJSON.encode(FieldsOrderCodable(first))
        #expect(wire.contentType == .json && wire.payload == codable)
        #expect(publisher.stats.messagesEncoded == 1)
        await publisher.close()
        await subscriber.close()
        await broker.stop()
    }
}
