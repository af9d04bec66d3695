import NotificationBus
import ServiceLifecycle

/// A `Bus` as a swift-service-lifecycle `Service`: put it in a `ServiceGroup` and the group's
/// graceful shutdown (SIGTERM, say) closes it, flushing what is queued and sending end of stream.
///
/// `run()` waits for the shutdown and then closes the bus; cancelled, it closes the bus at once.
/// Whatever else the application does with the bus goes on in its own services meanwhile.
public struct BusService: Service, CustomStringConvertible {
    /// The bus this service closes.
    public let bus: Bus

    /// The service of `bus`.
    public init(_ bus: Bus) {
        self.bus = bus
    }

    /// Waits for graceful shutdown (or cancellation), then closes the bus.
    public func run() async throws {
        // Throws only when the task is cancelled: the bus closes then too, which is the point.
        try? await gracefulShutdown()
        _ = await bus.close()
    }

    public var description: String { "BusService" }
}

/// A `Broker` as a swift-service-lifecycle `Service`: the group's graceful shutdown stops it.
public struct BrokerService: Service, CustomStringConvertible {
    /// The broker this service stops.
    public let broker: Broker

    /// The service of `broker`; `onStop` gets its final counters.
    public init(_ broker: Broker, onStop: (@Sendable (BrokerStatistics) -> Void)? = nil) {
        self.broker = broker
        self.onStop = onStop
    }

    private let onStop: (@Sendable (BrokerStatistics) -> Void)?

    /// Waits for graceful shutdown (or cancellation), then stops the broker.
    public func run() async throws {
        // Throws only when the task is cancelled: the broker stops then too.
        try? await gracefulShutdown()
        let statistics = await broker.stop()
        onStop?(statistics)
    }

    public var description: String { "BrokerService" }
}
