// An application that runs a bus in a swift-service-lifecycle ServiceGroup (README, "Depending
// on the package"): `nbus broker` in one terminal, this in another, then
// `nbus publish orders.created --count 3`; Ctrl-C (or SIGTERM) shuts the group down in order.
import BusServices
import Logging
import NotificationBus
import ServiceLifecycle

/// Prints every `orders.>` notification and loss until the group shuts down.
struct OrdersPrinter: Service {
    let bus: Bus

    func run() async throws {
        let orders = try bus.events(named: "orders.>")
        for await event in orders.cancelOnGracefulShutdown() {
            switch event {
            case .notification(let order): print(order.name, order.sequence)
            case .gap(let gap): print("lost", gap.count, "(\(gap.cause))")
            }
        }
    }
}

// The default endpoints of `nbus broker`.
let bus = try Bus(.brokered(frontend: "tcp://127.0.0.1:5550", backend: "tcp://127.0.0.1:5551"))
// Listed first, shut down last: the bus closes (flushing, end of stream) after its users stop.
let group = ServiceGroup(
    services: [BusService(bus), OrdersPrinter(bus: bus)],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: Logger(label: "orders"))
try await group.run()
