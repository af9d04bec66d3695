import Testing
@testable import NotificationBus
import TestSupport

// What a publisher counts as a subscriber of a name (`waitForSubscribers`, `nbus publish
// --subscribers N`). Found by the multi-host test: a subscriber of `orders.*.eu` made a publisher of
// `orders.shipped.us` start before the subscriber of `orders.>` it was waiting for had arrived, so
// that subscriber silently missed the first notifications (a late join is not a loss).

@Suite("Subscriber counting at a publisher", .timeLimit(.minutes(1)))
struct SubscriberCountTests {
    static let name = NotificationName("orders.shipped.us")

    @Test("a NotificationBus subscriber's prefix is not a foreign subscriber of names its pattern misses")
    func announcedPrefixIsNotForeign() throws {
        let pattern = NamePattern("orders.*.eu")
        var view = PublisherView(publisherID: 1)
        view.apply(subscribe: true, topic: ArraySlice(pattern.subscriptionPrefix))
        #expect(view.subscriberCount(matching: Self.name) == 1, "before its presence, the prefix looks foreign")
        view.apply(subscribe: true, topic: ArraySlice(ControlNames.presenceTopic(bus: 2, pattern: pattern)))
        #expect(view.subscriberCount(matching: Self.name) == 0)
        #expect(view.subscriberCount(matching: NotificationName("orders.created.eu")) == 1)
    }

    @Test("a foreign subscriber's prefix still counts as one")
    func foreignPrefixCounts() throws {
        var view = PublisherView(publisherID: 1)
        view.apply(subscribe: true, topic: ArraySlice(Array("orders.".utf8)))
        #expect(view.subscriberCount(matching: Self.name) == 1)
        #expect(view.subscriberCount(matching: NotificationName("audit.login")) == 0)
        // Announced patterns that match are counted one by one, foreign prefixes aside.
        let all = NamePattern("orders.>")
        view.apply(subscribe: true, topic: ArraySlice(ControlNames.presenceTopic(bus: 2, pattern: all)))
        view.apply(subscribe: true, topic: ArraySlice(ControlNames.presenceTopic(bus: 3, pattern: all)))
        #expect(view.subscriberCount(matching: Self.name) == 2)
    }

    @Test("presence topics alone (a plain SUB can forge them) count nobody until a covering data prefix is subscribed")
    func presenceWithoutDataPrefixCountsNobody() throws {
        let all = NamePattern("orders.>")
        var view = PublisherView(publisherID: 1)
        for bus in UInt64(2)...6 {
            view.apply(subscribe: true, topic: ArraySlice(ControlNames.presenceTopic(bus: bus, pattern: all)))
        }
        #expect(view.subscriberCount(matching: Self.name) == 0, "five forged presences made a publisher send into nothing")
        // Another name's prefix does not cover it either.
        view.apply(subscribe: true, topic: ArraySlice(Array("audit.".utf8)))
        #expect(view.subscriberCount(matching: Self.name) == 0)
        view.apply(subscribe: true, topic: ArraySlice(all.subscriptionPrefix))
        #expect(view.subscriberCount(matching: Self.name) == 5)
        view.apply(subscribe: false, topic: ArraySlice(all.subscriptionPrefix))
        #expect(view.subscriberCount(matching: Self.name) == 0)
    }

    @Test("waitForSubscribers does not take a subscriber of another pattern under the same prefix")
    func waitIgnoresOtherPatterns() async throws {
        let endpoint = try temporaryIPCEndpoint()
        let publisher = try Bus(.directPublisher(bind: endpoint))
        let other = try Bus(.directSubscriber(connect: [endpoint]))
        let eu = try other.notifications(named: "orders.*.eu")
        try await other.ready(NamePattern("orders.*.eu"))  // its prefix and presence reached the publisher
        await #expect(throws: BusError.self) {
            try await publisher.waitForSubscribers(count: 1, matching: Self.name, timeout: .milliseconds(300))
        }
        try await publisher.waitForSubscribers(count: 1, matching: NotificationName("orders.created.eu"))
        _ = eu
        await other.close()
        await publisher.close()
    }
}
