import Foundation
import NotificationBus
import Synchronization

/// The five-field message of issue 42's benchmarks: the same type goes to the bus and to
/// Foundation's `NotificationCenter` (it refines `NotificationCenter.AsyncMessage`).
///
/// Its bus coding is the Codable-free field path (`BusJSON.writeObject` / `readObject`), as an
/// application writes it for speed; `codableCoding` switches a process to the default `Codable`
/// coding (`BusJSON.encode` / `decode`) instead, to measure both (`nbus bench throughput --typed
/// --topology brokered --codable`). Both make the same bytes.
package struct BenchOrder: BusAsyncMessage, Equatable {
    package static let busName: NotificationName = "bench.orders"
    package var id: Int
    package var total: Double
    package var customer: String
    package var items: [String]
    package var express: Bool

    /// The default `Codable` coding instead of the field path, in this process.
    package static let codableCoding = Atomic<Bool>(false)

    package static func encodeBusPayload(_ message: Self) throws -> [UInt8] {
        if codableCoding.load(ordering: .relaxed) { return try BusJSON.encode(message) }
        return try BusJSON.writeObject { object in
            object.field("id", message.id)
            try object.field("total", message.total)
            object.field("customer", message.customer)
            object.field("items", message.items)
            object.field("express", message.express)
        }
    }

    package static func decodeBusPayload(_ payload: [UInt8]) throws -> Self {
        if codableCoding.load(ordering: .relaxed) { return try BusJSON.decode(Self.self, from: payload) }
        let object = try BusJSON.readObject(payload)
        return BenchOrder(
            id: try object.field("id"), total: try object.field("total"), customer: try object.field("customer"),
            items: try object.field("items"), express: try object.field("express"))
    }

    package init(id: Int, total: Double, customer: String, items: [String], express: Bool) {
        self.id = id
        self.total = total
        self.customer = customer
        self.items = items
        self.express = express
    }

    package init(id: Int) {
        self.id = id
        total = 9.5
        customer = "Acme Corporation"
        items = ["widget", "gadget"]
        express = id % 2 == 0
    }

    /// The JSON the bus sends for `BenchOrder(id:)`, built by hand (what a byte-API user writes):
    /// the same bytes as `encodeBusPayload`, keys in declaration order.
    package static func handBuiltJSON(id: Int) -> [UInt8] {
        let express = id % 2 == 0 ? "true" : "false"
        return Array(
            "{\"id\":\(id),\"total\":9.5,\"customer\":\"Acme Corporation\",\"items\":[\"widget\",\"gadget\"],\"express\":\(express)}"
                .utf8)
    }
}
