import NotificationBus

struct OrderCreated: BusAsyncMessage {
    static let busName: NotificationName = "orders.created"   // checked like any name literal
    var id: Int
    var total: Double
}

let bus = try Bus(.embedded())                      // one process, inproc://; see "Topologies"
let orders = try bus.messages(of: OrderCreated.self)
try await bus.ready(orders.pattern)                 // live at a publisher: no sleeping past the slow joiner

try await bus.post(OrderCreated(id: 42, total: 9.5))  // JSON on the wire (content type json)

for await order in orders {                         // cancelling the task unsubscribes at the publisher
    print("order", order.id, "total", order.total)
    break                                           // one is enough here; an observer would loop on
}
await bus.close()
// Prints "order 42 total 9.5".
