import NotificationBus

let bus = try Bus(.embedded())
let orders = try bus.notifications(named: "orders.>")
try await bus.ready("orders.>")

try await bus.post(name: "orders.created", payload: Array(#"{"id":42}"#.utf8),
                   headers: ["tenant": "acme"], contentType: .json)

for await order in orders {                         // cancelling the task unsubscribes at the publisher
    print(order.name, order.sequence, order.headers["tenant"] ?? "-")
    break                                           // one here; a service would loop on
}
await bus.close()
// Prints "orders.created 1 acme".
