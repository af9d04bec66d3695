import Foundation
import NotificationBus
import TestSupport
import Testing
import ToolSupport

// Typed messages across languages and processes (issue 42): a Python producer's JSON reaches a
// typed Swift observer through `nbus broker`, malformed and mistyped bodies counted while the good
// ones flow; and what a Swift program posts by type, a Python consumer reads. The scripts are
// examples/python/typed_producer.py and typed_consumer.py, run as they are documented.

/// A python3 that imports zmq, or nil (the tests are then skipped).
private let typedPython: URL? = {
    guard let probe = try? SpawnedProcess.run("/usr/bin/env", ["python3", "-c", "import zmq"]) else { return nil }
    return probe.status == 0 ? URL(fileURLWithPath: "/usr/bin/env") : nil
}()

private struct OrderCreated: BusAsyncMessage, Equatable {
    static let busName: NotificationName = "orders.created"
    var id: Int
    var total: Double
}

@Suite("Typed messages with Python peers (real processes, nbus broker)", .timeLimit(.minutes(2)))
struct TypedPythonEndToEndTests {
    static func script(_ name: String) -> String {
        DocSnippetTests.root.appendingPathComponent("examples/python/\(name)").path
    }

    @Test(
        "A Python producer's JSON -> nbus broker -> typed Swift observer; bad bodies counted, good ones kept",
        .enabled(if: typedPython != nil, "needs python3 with pyzmq"))
    func pythonProducerToTypedObserver() async throws {
        let python = try #require(typedPython)
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let subscriber = try Bus(.directSubscriber(connect: [backend]))
        let got = Watched<[OrderCreated]>([])
        let token = try subscriber.addObserver(for: OrderCreated.self) { order in got.update { $0.append(order) } }
        // No `ready`: a Python producer does not answer readiness tokens; it waits itself until
        // this subscription reaches it through the broker (as producer.py does).

        let producer = try children.start(
            "typed_producer", command: python,
            ["python3", Self.script("typed_producer.py"), "--connect", frontend, "--count", "3", "--with-bad"])
        expectExit(await producer.waitForExit(timeout: .seconds(60)), 0, producer)
        #expect(await got.wait(timeout: .seconds(30), until: { $0.count == 3 }), "\(producer.describe())")
        #expect(got.value == [OrderCreated(id: 1, total: 1.5), OrderCreated(id: 2, total: 3), OrderCreated(id: 3, total: 4.5)])
        // The malformed and the mistyped body: delivered to the observer's task, counted, skipped.
        #expect(token.stats.delivered == 5 && token.stats.undecodable == 2, "\(token.stats)")
        token.cancel()
        await subscriber.close()
    }

    @Test(
        "A Swift program's typed posts -> nbus broker -> a Python consumer reads every field",
        .enabled(if: typedPython != nil, "needs python3 with pyzmq"))
    func typedPostToPythonConsumer() async throws {
        let python = try #require(typedPython)
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let consumer = try children.start(
            "typed_consumer", command: python,
            ["python3", Self.script("typed_consumer.py"), "--connect", backend, "--count", "2", "--timeout", "30"])
        #expect(await consumer.waitForStdoutLine(containing: "ready", timeout: .seconds(60)) != nil, "\(consumer.describe())")
        let publisher = try Bus(.brokered(frontend: frontend, backend: backend))
        try await publisher.waitForSubscribers(matching: OrderCreated.busName, timeout: .seconds(30))
        try await publisher.post(OrderCreated(id: 42, total: 9.5))
        try await publisher.post(OrderCreated(id: -1, total: 0.25))
        let exited = await consumer.waitForExit(timeout: .seconds(60))
        expectExit(exited, 0, consumer)
        #expect(exited?.stdoutLines.filter { $0.hasPrefix("order") } == ["order 42 9.5", "order -1 0.25"], "\(consumer.describe())")
        await publisher.close()
    }

    @Test("Swift publisher -> nbus broker (a process) -> typed Swift observer: every field intact")
    func swiftThroughBrokerProcess() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let publisher = try Bus(.brokered(frontend: frontend, backend: backend))
        let subscriber = try Bus(.brokered(frontend: frontend, backend: backend))
        let envelopes = try subscriber.messageEnvelopes(of: OrderCreated.self)
        try await subscriber.ready(envelopes.pattern)
        // The broker has the subscription; the publisher must have it too, or its first posts are
        // skipped as unwanted (seen once in four runs under load: 60 s without the 50).
        try await publisher.waitForSubscribers(matching: OrderCreated.busName, timeout: .seconds(30))
        let sent = (1...50).map { OrderCreated(id: $0 * 1_000_003, total: Double($0) / 8) }
        for order in sent { try await publisher.post(order, headers: ["n": "\(order.id)"]) }
        let received = await envelopes.first(50, within: .seconds(60))
        #expect(received.map(\.message) == sent)
        #expect(received.map(\.sequence) == Array(1...50))
        #expect(received.allSatisfy { $0.publisherID == publisher.publisherID && $0.headers["n"] == "\($0.message.id)" })
        #expect(envelopes.stats.undecodable == 0 && subscriber.stats.messagesDecoded == 50)
        await publisher.close()
        await subscriber.close()
    }
}
