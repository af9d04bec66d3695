import Foundation
import NotificationBus

/// The five-field message of issue 42's benchmarks: the same type goes to the bus and to
/// Foundation's `NotificationCenter` (it refines `NotificationCenter.AsyncMessage`).
package struct BenchOrder: BusAsyncMessage, Equatable {
    package static let busName: NotificationName = "bench.orders"
    package var id: Int
    package var total: Double
    package var customer: String
    package var items: [String]
    package var express: Bool

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
