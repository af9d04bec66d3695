import BusServices
import Foundation
import Logging
import NotificationBus
import ServiceLifecycle
import Synchronization
import Testing
import TestSupport
import ZeroMQ

@Suite("Bus and Broker as swift-service-lifecycle services", .timeLimit(.minutes(1)))
struct LifecycleServicesTests {
    @Test("A graceful shutdown of the group closes the bus (after its end of stream) and stops the broker")
    func gracefulShutdownClosesAndStops() async throws {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let subscriber = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let stream = try subscriber.notifications(named: "svc.>")
        try await subscriber.ready("svc.>")
        try await publisher.waitForSubscribers(count: 1, matching: "svc.one")
        try await publisher.post(name: "svc.one")

        let stopped = Mutex<BrokerStatistics?>(nil)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                // A group stops its services in reverse order: the broker outlives the bus, whose
                // end of stream goes through it.
                services: [
                    .init(service: BrokerService(broker) { statistics in stopped.withLock { $0 = statistics } }),
                    .init(service: BusService(publisher)),
                ],
                logger: Logger(label: "services-test")))
        let running = Task { try await group.run() }
        #expect(await stream.first(1).first?.name == "svc.one")
        await group.triggerGracefulShutdown()
        try await running.value(within: .seconds(30))

        // The publisher closed: posting is refused, and its subscriber heard its end of stream.
        await #expect(throws: BusError.closed) { try await publisher.post(name: "svc.two") }
        let publisherStats = await publisher.close()  // already closed: its final counters
        #expect(publisherStats.endOfStreamUnacknowledged == 0)
        let subscriberStats = await subscriber.close()
        #expect(subscriberStats.endOfStreamRecords >= 1)
        // The broker stopped, after forwarding the notification and the end of stream.
        #expect((stopped.withLock { $0 })?.fromPublishers ?? 0 >= 2)
    }
}

@Suite("Errors next to Foundation")
struct LocalizedErrorTests {
    @Test("localizedDescription is each error's own sentence, saying what to do")
    func localizedDescriptions() throws {
        let errors: [any Error] = [
            BusError.closed, BusError.outboundQueueFull(capacity: 8), BusError.noResponders("x.y"),
            BusError.invalidName(.empty), NameError.empty, RejectionReason.missingNameTerminator,
            EncodeError.tooManyHeaders(count: 40), ZMQError(code: 11, operation: "zmq_msg_send"),
        ]
        for error in errors {
            #expect(error.localizedDescription == "\(error)", "\(error)")
            #expect(!error.localizedDescription.contains("could not be completed"))
        }
        #expect(BusError.closed.localizedDescription.contains("open a new Bus"))
        #expect(BusError.outboundQueueFull(capacity: 8).localizedDescription.contains("await post"))
    }
}
