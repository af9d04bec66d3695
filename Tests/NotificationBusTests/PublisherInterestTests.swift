import Testing

@testable import NotificationBus
import TestSupport

// Filtering before encoding: what a post's name is worth to this publisher's subscribers, decided
// without sockets, and what a real publisher does with it.
@Suite("PublisherInterest: filtering before encoding", .timeLimit(.minutes(1)))
struct PublisherInterestTests {
    let created = NotificationName("orders.created")
    let shipped = NotificationName("orders.shipped")
    let login = NotificationName("audit.login")

    @Test("a name is covered by a prefix of its bytes, or by its exact bytes and NUL; not by a longer prefix")
    func coverage() {
        #expect(PublisherInterest.covered(created, by: [Array("orders.".utf8)]))
        #expect(PublisherInterest.covered(created, by: [Array("orders.created".utf8) + [0]]))
        #expect(PublisherInterest.covered(created, by: [[]]))  // the empty prefix: everything
        #expect(!PublisherInterest.covered(created, by: [Array("orders.created".utf8) + [0, 1]]))
        #expect(!PublisherInterest.covered(created, by: [Array("orders.createdx".utf8)]))
        #expect(!PublisherInterest.covered(login, by: [Array("orders.".utf8)]))
        #expect(!PublisherInterest.covered(created, by: [[UInt8]]()))
    }

    @Test("never sent and not wanted: skipped without a sequence number; once sent, skips use one")
    func decisions() {
        var interest = PublisherInterest()
        #expect(interest.decide(created) == .unwanted)
        interest.changeRemote(Array("orders.created".utf8) + [0], subscribed: true)
        #expect(interest.decide(created) == .wanted)
        #expect(interest.decide(shipped) == .unwanted)
        interest.changeRemote(Array("orders.created".utf8) + [0], subscribed: false)
        // Sent before: a subscriber this publisher cannot see now may count the gap.
        #expect(interest.decide(created) == .unwantedAfterSending)
        #expect(interest.decide(shipped) == .unwanted)
        #expect(interest.unwanted == 4)
    }

    @Test("many subscriptions: the answer follows the name's own prefixes, whatever their number")
    func manyPrefixes() {
        var interest = PublisherInterest()
        for index in 0..<20_000 { interest.changeRemote(Array("other.\(index).".utf8), subscribed: true) }
        #expect(interest.decide(created) == .unwanted)
        interest.changeRemote([], subscribed: true)  // the empty prefix: a subscriber of everything
        #expect(interest.decide(created) == .wanted)
        #expect(interest.decide(login) == .wanted)
        interest.changeRemote([], subscribed: false)
        // Both were sent while the empty prefix was there: skipping them now uses their numbers.
        #expect(interest.decide(login) == .unwantedAfterSending)
        #expect(interest.decide(created) == .unwantedAfterSending)
        #expect(interest.decide(shipped) == .unwanted)
    }

    @Test("loopback prefixes count until their last subscription goes; a closed bus refuses first")
    func localPrefixes() {
        var interest = PublisherInterest()
        let prefix = Array("orders.".utf8)
        interest.changeLocal(prefix, subscribed: true)
        interest.changeLocal(prefix, subscribed: true)
        #expect(interest.decide(created) == .wanted)
        interest.changeLocal(prefix, subscribed: false)
        #expect(interest.decide(shipped) == .wanted)
        interest.changeLocal(prefix, subscribed: false)
        #expect(interest.decide(shipped) == .unwantedAfterSending)
    }

    @Test(
        "a post nobody wants costs no sequence number: a subscriber that comes later starts at 1, with no gap",
        .timeLimit(.minutes(1)))
    func laterSubscriberSeesNoFalseGap() async throws {
        let endpoint = try temporaryIPCEndpoint()
        let publisher = try Bus(.directPublisher(bind: endpoint))
        for _ in 0..<50 { try await publisher.post(name: created) }
        #expect(publisher.stats.unwanted == 50 && publisher.stats.sent == 0)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let events = try subscriber.events(named: NamePattern(exactly: created))
        try await publisher.waitForSubscribers(count: 1, matching: created)
        try await publisher.post(name: created, payload: [1])
        guard case .notification(let first)? = await events.first(1).first else {
            Issue.record("expected a notification first, not a gap")
            return
        }
        #expect(first.sequence == 1 && first.payload == [1])
        #expect(events.stats.lostUpstream == 0)
        let stats = await publisher.close()
        #expect(stats.posted == 51 && stats.unwanted == 50 && stats.sent == 1)
        await subscriber.close()
    }
}
