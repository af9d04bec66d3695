import NotificationBus

/// The small demo: one process, an embedded (`inproc://`) bus, a `for await` subscriber that
/// prints what it receives decoded. It awaits readiness instead of sleeping past the slow joiner.
package enum EmbeddedDemo {
    /// Posts `count` notifications (`demo.orders.created`/`shipped`) and calls `print` for each line.
    package static func run(count: Int = 5, print: @Sendable (String) -> Void) async throws {
        let bus = try Bus(.embedded(name: "nbus-demo"))
        let pattern = NamePattern("demo.orders.>")
        let orders = try bus.events(named: pattern)
        try await bus.ready(pattern)
        print("subscribed to \(pattern) (ZeroMQ prefix \"\(String(decoding: pattern.subscriptionPrefix, as: UTF8.self))\"), live at the publisher")

        for index in 1...count {
            try await bus.post(
                name: index % 2 == 0 ? "demo.orders.shipped" : "demo.orders.created",
                payload: Array(#"{"order":\#(index)}"#.utf8), headers: ["region": "eu"], contentType: .json)
        }
        var received = 0
        for await event in orders {
            switch event {
            case .notification(let n):
                received += 1
                let headers = n.headers.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                print(
                    "\(n.name) seq=\(n.sequence) publisher=\(ControlNames.hex(n.publisherID)) "
                        + "type=\(n.contentType) headers=[\(headers)] payload=\(String(decoding: n.payload, as: UTF8.self))")
            case .gap(let gap):
                print("lost: \(gap)")
            }
            if received == count { break }
        }
        let stats = orders.stats
        await bus.close()
        print("subscription: \(stats)")
    }
}
