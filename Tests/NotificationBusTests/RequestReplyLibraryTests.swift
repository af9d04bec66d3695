import Testing
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
        let doubled = try await bus.request(NotificationName("math.double"), payload: Array("21".utf8), headers: ["tenant": "acme"])
        #expect(String(decoding: doubled.payload, as: UTF8.self) == "42")
        #expect(doubled.headers[RequestReply.statusHeader] == RequestReply.ok)
        #expect(doubled.headers["tenant"] == "acme")
        #expect(doubled.name.rawValue.hasPrefix("_inbox."))
        let failed = try await bus.request(NotificationName("math.double"), payload: Array("x".utf8))
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

    @Test("A bus that only publishes or only subscribes cannot request")
    func needsBothSides() async throws {
        let publisher = try Bus(.directPublisher(bind: "inproc://rr-only-pub"))
        await #expect(throws: BusError.notASubscriber) { _ = try await publisher.request(NotificationName("a")) }
        await publisher.close()
    }
}
