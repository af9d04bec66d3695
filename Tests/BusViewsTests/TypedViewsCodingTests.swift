import BusViews
import NotificationBus
import TestSupport
import Testing

// Typed modifiers and coding (issue 42, items 4, 5 and 7): in one process the value is handed
// over as it is (no JSON, asserted by the bus's counters); from another bus over a real socket
// it is decoded on the consuming side; what does not decode is an event and a count; the
// articles' claims about hidden views hold with message types too.

private final class Parcel: BusSubject, Sendable {
    let number: String
    init(_ number: String) { self.number = number }
    var busSubjectID: String { number }
}

private struct ParcelMoved: BusAsyncMessage, Equatable {
    typealias Subject = Parcel
    static let busName: NotificationName = "views.parcels.moved"
    var depot: String
}

private struct Badge: BusMainActorMessage, Equatable {
    static let busName: NotificationName = "views.badge"
    var count: Int
}

private struct Tracker: View {
    let seen: EventLog<String>
    var body: ViewContent {
        ViewContent().onReceive(of: Parcel("P-1"), for: ParcelMoved.self) { moved in
            MainActor.assertIsolated()
            seen.append(moved.depot)
        }
    }
}

private struct TrackerTask: View {
    let seen: EventLog<String>
    var body: ViewContent {
        ViewContent().task(subscribing: ParcelMoved.self, of: Parcel("P-2")) { moves in
            for await moved in moves { seen.append(moved.depot) }
        }
    }
}

private struct BadgeView: View {
    @State var count = 0
    let seen: EventLog<Int>
    var body: ViewContent {
        ViewContent().onReceive(of: Badge.self) { badge in
            count = badge.count
            seen.append(badge.count)
        }
    }
}

private struct BadgeEvents: View {
    let events: EventLog<MessageEvent<Badge>>
    var body: ViewContent {
        ViewContent().task(subscribing: Badge.self) { badges in
            for await event in badges.events { events.append(event) }
        }
    }
}

/// Two views side by side, at "root/a" and "root/b".
private struct Both: View {
    let first: @MainActor () -> any View
    let second: @MainActor () -> any View
    var body: ViewContent {
        ViewContent {
            Child("a", first)
            Child("b", second)
        }
    }
}

/// onReceive and a task feed of one message type side by side (claim 6 with messages).
private struct BadgeConsumers: View {
    let received: EventLog<Int>
    let fed: EventLog<Int>
    var body: ViewContent {
        ViewContent {
            Child("onReceive") { BadgeView(seen: received) }
            Child("feed") { BadgeFeed(seen: fed) }
        }
    }

    struct BadgeFeed: View {
        let seen: EventLog<Int>
        var body: ViewContent {
            ViewContent().task(subscribing: Badge.self) { badges in
                for await badge in badges { seen.append(badge.count) }
            }
        }
    }
}

/// Claims 1 and 2 with messages: onReceive renders per message; a filtering task per match.
private struct BadgeRenders: View {
    var body: ViewContent {
        ViewContent {
            Child("onReceive") { BadgeView(seen: EventLog<Int>()) }
            Child("filter") { HighBadges() }
        }
    }

    struct HighBadges: View {
        @State var high = 0
        var body: ViewContent {
            ViewContent().task(subscribing: Badge.self) { badges in
                for await badge in badges where badge.count > 8 { high = badge.count }
            }
        }
    }
}

@Suite("Typed views: values in-process, decoding across processes", .serialized, .timeLimit(.minutes(1)))
@MainActor
struct TypedViewsCodingTests {
    @Test("In one process both styles get the posted values: nothing encoded, nothing decoded")
    func localValuesAreNotCoded() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let received = EventLog<Int>()
        let events = EventLog<MessageEvent<Badge>>()
        host.mount(Both { BadgeView(seen: received) } second: { BadgeEvents(events: events) })
        let badge = try #require(host.node(at: "root/a"))
        try await bus.ready(Badge.busObservedPattern)
        for count in 1...20 { try await bus.post(Badge(count: count)) }
        await received.wait(count: 20)
        await events.wait(count: 20)
        #expect(received.events == Array(1...20))
        let fed = events.events.compactMap { if case .message(let envelope) = $0 { envelope } else { nil } }
        #expect(fed.map(\.message.count) == Array(1...20))
        #expect(fed.first?.publisherID == bus.publisherID && fed.first?.sequence == 1)
        // The value itself: no subscriber outside the process asked for JSON, none was made.
        #expect(fed.allSatisfy { $0.notification.payload.isEmpty })
        #expect(bus.stats.messagesEncoded == 0 && bus.stats.messagesDecoded == 0, "\(bus.stats)")
        #expect(badge.metrics.undecodable == 0)
        host.unmount()
        await bus.close()
    }

    @Test("From another bus over tcp: decoded on the consuming side; malformed and mistyped ones are events and counts")
    func remoteMessagesAreDecoded() async throws {
        let publisher = try Bus(.directPublisher(bind: "tcp://127.0.0.1:*"))
        let endpoint = try #require(publisher.endpoints.first)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let host = ViewHost(bus: subscriber)
        let received = EventLog<Int>()
        let events = EventLog<MessageEvent<Badge>>()
        host.mount(Both { BadgeView(seen: received) } second: { BadgeEvents(events: events) })
        let badge = try #require(host.node(at: "root/a"))
        let eventsNode = try #require(host.node(at: "root/b"))
        try await subscriber.ready(Badge.busObservedPattern)
        try await publisher.post(Badge(count: 1))
        try await publisher.post(name: "views.badge", payload: Array(#"{"count":"#.utf8), contentType: .json)
        try await publisher.post(Badge(count: 2))
        try await publisher.post(name: "views.badge", payload: Array(#"{"count":"two"}"#.utf8), contentType: .json)
        try await publisher.post(name: "views.badge", payload: Array("3".utf8), contentType: .text)
        try await publisher.post(Badge(count: 3))
        await received.wait(count: 3)
        let all = await events.wait(count: 6)
        #expect(received.events == [1, 2, 3])
        let kinds = all.map { event -> String in
            switch event {
            case .message(let envelope): "m\(envelope.message.count)"
            case .gap: "gap"
            case .cleared: "cleared"
            case .undecodable(let notification, let error):
                notification.name == Badge.busName && error.type == "Badge" ? "u\(notification.sequence)" : "?"
            }
        }
        #expect(kinds == ["m1", "u2", "m2", "u4", "u5", "m3"], "\(all)")
        let metrics = await badge.waitForMetrics(within: standardWait) { $0.undecodable == 3 && $0.messagesHandled == 3 }
        #expect(metrics.bodyEvaluations == 4, "\(metrics)")
        await eventsNode.waitForMetrics(within: standardWait) { $0.undecodable == 3 }
        #expect(publisher.stats.messagesEncoded == 3, "\(publisher.stats)")
        // Counted as the bus's own typed sequences count: each good message once per consumer
        // that decoded it (the onReceive view and the events view: 3 each), the undecodable none.
        #expect(subscriber.stats.messagesDecoded == 6, "\(subscriber.stats)")
        #expect(publisher.stats.messagesDecoded == 0)
        host.unmount()
        await subscriber.close()
        await publisher.close()
    }

    @Test("A subject: onReceive(of:for:) and task(subscribing:of:) take only their subject's messages; a bad id is an error")
    func subjects() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let tracked = EventLog<String>()
        let tasked = EventLog<String>()
        host.mount(Both { Tracker(seen: tracked) } second: { TrackerTask(seen: tasked) })
        try await bus.ready(NamePattern("views.parcels.moved.P-1"))
        try await bus.ready(NamePattern("views.parcels.moved.P-2"))
        for (parcel, depot) in [("P-1", "Lyon"), ("P-2", "Gent"), ("P-3", "Oslo"), ("P-1", "Bern"), ("P-2", "Graz")] {
            try await bus.post(ParcelMoved(depot: depot), subject: Parcel(parcel))
        }
        await tracked.wait(count: 2)
        await tasked.wait(count: 2)
        #expect(tracked.events == ["Lyon", "Bern"] && tasked.events == ["Gent", "Graz"])
        #expect(bus.stats.messagesEncoded == 0)
        host.unmount()

        // An id that is not one token subscribes nothing: recorded, never a crash.
        struct BadSubject: View {
            var body: ViewContent { ViewContent().onReceive(of: Parcel("a.b"), for: ParcelMoved.self) { _ in } }
        }
        let badHost = ViewHost(bus: bus)
        badHost.mount(BadSubject())
        #expect(badHost.subscriptionErrors.count == 1, "\(badHost.subscriptionErrors)")
        badHost.unmount()
        await bus.close()
    }

    @Test("Claim 6 with messages: a hidden task-style view stops consuming, the onReceive style keeps going")
    func hiddenViews() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let received = EventLog<Int>()
        let fed = EventLog<Int>()
        let tabs = Switcher { BadgeConsumers(received: received, fed: fed) }
        host.mount(tabs)
        try await bus.ready(Badge.busObservedPattern)
        for count in 1...3 { try await bus.post(Badge(count: count)) }
        await received.wait(count: 3)
        await fed.wait(count: 3)

        tabs.selection = "elsewhere"
        let feedNode = try #require(host.node(at: "root/content/feed"))
        let receiverNode = try #require(host.node(at: "root/content/onReceive"))
        #expect(feedNode.exists && !feedNode.isVisible && receiverNode.exists && !receiverNode.isVisible)
        for count in 4...7 { try await bus.post(Badge(count: count)) }
        await received.wait(count: 7)
        await feedNode.waitForMetrics(within: standardWait) { $0.feedReceived == 7 }
        #expect(feedNode.metrics.missedWhileHidden == 4)

        tabs.selection = "content"
        for count in 8...9 { try await bus.post(Badge(count: count)) }
        await received.wait(count: 9)
        await fed.wait(count: 5)
        #expect(received.events == Array(1...9))
        #expect(fed.events == [1, 2, 3, 8, 9])
        #expect(receiverNode.metrics.messagesHandled == 9)
        #expect(bus.stats.messagesEncoded == 0 && bus.stats.messagesDecoded == 0)
        host.unmount()
        await bus.close()
    }

    @Test("Claims 1 and 2 with messages: onReceive renders per message, a filtering task only per match")
    func rendersPerMessageAndPerMatch() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        host.mount(BadgeRenders())
        let receiver = try #require(host.node(at: "root/onReceive"))
        let filter = try #require(host.node(at: "root/filter"))
        try await bus.ready(Badge.busObservedPattern)
        for count in 1...10 { try await bus.post(Badge(count: count)) }
        let received = await receiver.waitForMetrics(within: standardWait) { $0.messagesHandled == 10 && $0.bodyEvaluations >= 11 }
        let filtered = await filter.waitForMetrics(within: standardWait) {
            $0.feedReceived == 10 && $0.stateUpdates == 2 && $0.bodyEvaluations == 3
        }
        // One render at mount, then one per message for onReceive; one per match (9, 10) for the task.
        #expect(received.bodyEvaluations == 11, "\(received)")
        #expect(filtered.messagesHandled == 10 && filtered.messagesFiltered == 8, "\(filtered)")
        #expect(bus.stats.messagesEncoded == 0 && bus.stats.messagesDecoded == 0)
        host.unmount()
        await bus.close()
    }

    @Test("Claim 7 with messages: conditional content destroys the view and releases its typed subscriptions")
    func removalReleasesTypedSubscriptions() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let received = EventLog<Int>()
        let fed = EventLog<Int>()
        let container = Conditional { BadgeConsumers(received: received, fed: fed) }
        host.mount(container)
        try await bus.ready(Badge.busObservedPattern)
        for count in 1...3 { try await bus.post(Badge(count: count)) }
        await received.wait(count: 3)
        await fed.wait(count: 3)
        #expect(bus.stats.activeSubscriptions == 2)

        container.show = false
        #expect(host.node(at: "root/content") == nil)
        try await bus.waitForNoSubscribers(matching: Badge.busName)
        let fence = try bus.notifications(named: "fence.>")
        try await bus.ready(NamePattern("fence.>"))
        for count in 4...6 { try await bus.post(Badge(count: count)) }
        try await bus.post(name: "fence.done")
        #expect(await fence.first(1).first?.name.rawValue == "fence.done")
        #expect(received.events == [1, 2, 3] && fed.events == [1, 2, 3])
        #expect(bus.stats.activeSubscriptions == 1)
        host.unmount()
        await bus.close()
    }
}
