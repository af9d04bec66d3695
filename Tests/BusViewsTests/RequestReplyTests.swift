import BusViews
import NotificationBus
import Testing
import TestSupport

@Suite("Request/reply on the bus, and a like action that sends one request however fast it is triggered", .timeLimit(.minutes(1)))
@MainActor
struct RequestReplyTests {
    @Test("request returns the responder's reply", .timeLimit(.minutes(1)))
    func requestGetsReply() async throws {
        let bus = try Bus(.embedded())
        let responder = try bus.respond(to: NamePattern("math.double")) { request in
            let value = Int(text(request)) ?? 0
            return Array("\(value * 2)".utf8)
        }
        try await bus.ready(NamePattern("math.double"))
        // The request's own 5 s default is a product setting, not this test's subject: a loaded
        // machine gets the standard wait (issue 38 item 11).
        let reply = try await bus.request(NotificationName("math.double"), payload: Array("21".utf8), timeout: standardWait)
        #expect(text(reply) == "42")
        responder.cancel()
        await bus.close()
    }

    @Test("request says .noResponders when nothing subscribes to the name", .timeLimit(.minutes(1)))
    func requestWithoutResponders() async throws {
        let bus = try Bus(.embedded())
        await #expect(throws: BusError.noResponders(NotificationName("nobody.home"))) {
            _ = try await bus.request(NotificationName("nobody.home"), timeout: .milliseconds(50))
        }
        await bus.close()
    }

    @Test("A like action built on AsyncAction sends one request however fast it is triggered", .timeLimit(.minutes(1)))
    func likeSendsOneRequest() async throws {
        let bus = try Bus(.embedded())
        let requests = EventLog<String>()
        let release = Gate()
        let responder = try bus.respond(to: NamePattern("photo.like")) { request in
            requests.append(text(request))
            await release.wait()
            return Array("liked".utf8)
        }
        try await bus.ready(NamePattern("photo.like"))
        let replies = EventLog<String>()
        let like = AsyncAction {
            if let reply = try? await bus.request(NotificationName("photo.like"), payload: Array("photo-7".utf8), timeout: standardWait) {
                replies.append(text(reply))
            }
        }
        for _ in 0..<10 { like.trigger() }
        #expect(like.runsStarted == 1)
        #expect(like.triggersIgnored == 9)
        await requests.wait(count: 1)
        release.fire()
        await like.waitUntilIdle(within: standardWait)
        #expect(replies.events == ["liked"])
        #expect(requests.events == ["photo-7"])
        responder.cancel()
        await bus.close()
    }
}
