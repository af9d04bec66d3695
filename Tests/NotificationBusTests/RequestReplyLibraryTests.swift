import Testing
import TestSupport
@testable import NotificationBus

@Suite("Request/reply in NotificationBus (NBP-1 §16)", .timeLimit(.minutes(1)))
struct RequestReplyLibraryTests {
    @Test("A reply names its request by the reply-to name: _inbox.<requester hex>.<n>, as the vector")
    func inboxName() throws {
        #expect(RequestReply.inboxName(requester: 0x1234_5678_9ABC_DEF0, number: 7).rawValue == "_inbox.123456789abcdef0.7")
        let vector = try #require(ProtocolVector.valid.first { $0.id == "request-reply-to" })
        let decoded = try EnvelopeCodec.decode(frames: vector.frameBytes)
        #expect(decoded.headers[RequestReply.replyToHeader] == "_inbox.123456789abcdef0.7")
    }

    @Test("request gets the responder's reply with status ok; an error reply says so; headers reach the responder")
    func replies() async throws {
        let bus = try Bus(.embedded())
        let responder = try bus.respond(to: NamePattern("math.>")) { (request: BusNotification) async -> Reply in
            guard let value = Int(String(decoding: request.payload, as: UTF8.self)) else { return .error("not a number") }
            var reply = Reply(payload: Array("\(value * 2)".utf8))
            reply.headers["tenant"] = request.headers["tenant"] ?? "none"
            return reply
        }
        try await bus.ready(NamePattern("math.>"))
        let doubled = try await bus.request(
            NotificationName("math.double"), payload: Array("21".utf8), headers: ["tenant": "acme"], timeout: standardWait)
        #expect(String(decoding: doubled.payload, as: UTF8.self) == "42")
        #expect(doubled.headers[RequestReply.statusHeader] == RequestReply.ok)
        #expect(doubled.headers["tenant"] == "acme")
        #expect(doubled.name.rawValue.hasPrefix("_inbox."))
        let failed = try await bus.request(NotificationName("math.double"), payload: Array("x".utf8), timeout: standardWait)
        #expect(failed.headers[RequestReply.statusHeader] == RequestReply.error)
        #expect(String(decoding: failed.payload, as: UTF8.self) == "not a number")
        responder.cancel()
        await bus.close()
    }

    @Test("Nothing subscribed to the name: noResponders within the grace, not after the timeout")
    func noResponders() async throws {
        let bus = try Bus(.embedded())
        let clock = ContinuousClock()
        let started = clock.now
        await #expect(throws: BusError.noResponders(NotificationName("nobody.home"))) {
            _ = try await bus.request(NotificationName("nobody.home"), timeout: .seconds(30))
        }
        #expect(started.duration(to: clock.now) < .seconds(10))
        await bus.close()
    }

    @Test("A responder that never answers: timedOut after the timeout")
    func timesOut() async throws {
        let bus = try Bus(.embedded())
        let silent = try bus.notifications(named: "slow.>")
        await #expect(throws: BusError.timedOut(what: "a reply to slow.op", after: .milliseconds(200))) {
            _ = try await bus.request(NotificationName("slow.op"), timeout: .milliseconds(200))
        }
        silent.cancel()
        await bus.close()
    }

    @Test("Through a broker, 8 requester buses x 25 requests at once: every one answered with its own payload")
    func concurrentThroughBroker() async throws {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        // A configuration per bus: its publisher id is drawn when the configuration is made, and
        // buses sharing one would share reply names.
        let (frontend, backend) = (broker.frontendEndpoint, broker.backendEndpoint)
        let responderBus = try Bus(.brokered(frontend: frontend, backend: backend))
        let responder = try responderBus.respond(to: NamePattern("echo.>")) { (request: BusNotification) async -> [UInt8] in
            request.payload
        }
        try await responderBus.ready(NamePattern("echo.>"))
        // Each requester bus is new: its connections come up while its requests are under way,
        // which is when replies used to be posted before the reply subscription reached the responder.
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for busIndex in 0..<8 {
                group.addTask {
                    let bus = try Bus(.brokered(frontend: frontend, backend: backend))
                    let count = try await withThrowingTaskGroup(of: Bool.self) { requests in
                        for index in 0..<25 {
                            requests.addTask {
                                let payload = Array("\(busIndex).\(index)".utf8)
                                let reply = try await bus.request(NotificationName("echo.x"), payload: payload, timeout: .seconds(30))
                                return reply.payload == payload
                            }
                        }
                        return try await requests.reduce(0) { $0 + ($1 ? 1 : 0) }
                    }
                    await bus.close()
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(answered == 200)
        responder.cancel()
        await responderBus.close()
        await broker.stop()
    }

    @Test("Through a broker with no responder: noResponders in a few round trips, with 30 s of timeout unused")
    func noRespondersThroughBroker() async throws {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let (frontend, backend) = (broker.frontendEndpoint, broker.backendEndpoint)
        // Something else is subscribed (all of other.>), so the broker's set is not empty.
        let bystander = try Bus(.brokered(frontend: frontend, backend: backend))
        let other = try bystander.notifications(named: "other.>")
        try await bystander.ready(NamePattern("other.>"))
        let bus = try Bus(.brokered(frontend: frontend, backend: backend))
        let clock = ContinuousClock()
        let started = clock.now
        await #expect(throws: BusError.noResponders(NotificationName("nobody.home"))) {
            _ = try await bus.request(NotificationName("nobody.home"), timeout: .seconds(30))
        }
        #expect(started.duration(to: clock.now) < .seconds(10))
        other.cancel()
        await bus.close()
        await bystander.close()
        await broker.stop()
    }

    @Test("Through a broker with no broker running: timedOut after the timeout, not noResponders")
    func noBroker() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let bus = try Bus(.brokered(frontend: folder.ipc("none-f.sock"), backend: folder.ipc("none-b.sock")))
        await #expect {
            _ = try await bus.request(NotificationName("nobody.home"), timeout: .milliseconds(300))
        } throws: { error in
            (error as? BusError)?.code == .timedOut
        }
        await bus.close()
    }

    @Test("reply(to:with:) waits for the requester's subscription; none within the wait: timedOut, nothing posted")
    func replyWaitsForTheRequester() async throws {
        let bus = try Bus(.embedded())
        let request = BusNotification(
            name: NotificationName("math.double"), headers: [RequestReply.replyToHeader: "_inbox.0000000000000001.1"])
        await #expect(
            throws: BusError.timedOut(what: "the requester's subscription to _inbox.0000000000000001.1", after: .milliseconds(200))
        ) {
            try await bus.reply(to: request, with: Reply(payload: []), requesterWait: .milliseconds(200))
        }
        #expect(bus.stats.posted == 0)
        // Subscribed while the reply waits: it is posted then, and arrives.
        let inbox = NotificationName("_inbox.0000000000000001.2")
        let second = BusNotification(name: NotificationName("math.double"), headers: [RequestReply.replyToHeader: inbox.rawValue])
        let replying = Task { try await bus.reply(to: second, with: Reply(payload: Array("42".utf8))) }
        let replies = try bus.notifications(named: NamePattern(exactly: inbox))
        try await replying.value
        var iterator = replies.makeAsyncIterator()
        let reply = await iterator.next()
        #expect(reply.map { String(decoding: $0.payload, as: UTF8.self) } == "42")
        replies.cancel()
        await bus.close()
    }

    @Test("A bus that only publishes or only subscribes cannot request")
    func needsBothSides() async throws {
        let publisher = try Bus(.directPublisher(bind: "inproc://rr-only-pub"))
        await #expect(throws: BusError.notASubscriber) { _ = try await publisher.request(NotificationName("a")) }
        await publisher.close()
    }
}
