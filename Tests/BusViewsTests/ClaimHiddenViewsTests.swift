import BusViews
import NotificationBus
import Testing
import TestSupport

/// The three consumers side by side: `onReceive`, a runtime feed task, and the article's plain
/// task that subscribes inside its own closure.
private struct Consumers: View {
    let bus: Bus
    let pattern: NamePattern
    let received: EventLog<String>
    let fed: EventLog<BusEvent>
    let plain: EventLog<String>
    let plainSubscribed: EventLog<Int>

    var body: ViewContent {
        ViewContent {
            Child("onReceive") { Receiver(pattern: pattern, log: received) }
            Child("feed") { FeedTask(pattern: pattern, log: fed) }
            Child("plain") { PlainTask(bus: bus, pattern: pattern, log: plain, subscribed: plainSubscribed) }
        }
    }

    struct Receiver: View {
        let pattern: NamePattern
        let log: EventLog<String>
        var body: ViewContent { ViewContent().onReceive(pattern) { log.append(text($0)) } }
    }

    struct FeedTask: View {
        let pattern: NamePattern
        let log: EventLog<BusEvent>
        var body: ViewContent {
            ViewContent().task(subscribing: pattern) { feed in
                for await event in feed { log.append(event) }
            }
        }
    }

    struct PlainTask: View {
        let bus: Bus
        let pattern: NamePattern
        let log: EventLog<String>
        let subscribed: EventLog<Int>
        var body: ViewContent {
            ViewContent().task {
                guard let notifications = try? bus.notifications(named: pattern) else { return }
                subscribed.append(subscribed.events.count + 1)
                for await notification in notifications { log.append(text(notification)) }
            }
        }
    }
}

private func notificationTexts(_ events: [BusEvent]) -> [String] {
    events.compactMap { if case .notification(let notification) = $0 { text(notification) } else { nil } }
}

@Suite("Article claim 6: hidden but existing views (TabView, LazyList)", .timeLimit(.minutes(1)))
@MainActor
struct ClaimHiddenViewsTests {
    @Test("6a. In a TabView, task consumers miss what is posted while their tab is hidden; onReceive misses nothing",
          .timeLimit(.minutes(1)))
    func tabViewHiddenTab() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let consumed = NamePattern("claim6.>")
        let received = EventLog<String>()
        let fed = EventLog<BusEvent>()
        let plain = EventLog<String>()
        let plainSubscribed = EventLog<Int>()
        let tabs = Switcher {
            Consumers(
                bus: bus, pattern: consumed, received: received, fed: fed, plain: plain,
                plainSubscribed: plainSubscribed)
        }
        host.mount(tabs)
        await plainSubscribed.wait(count: 1)
        try await bus.ready(consumed)
        for index in 0..<3 { try await bus.post(name: "claim6.item", payload: Array("visible \(index)".utf8)) }
        await received.wait(count: 3)
        await fed.wait(count: 3)
        await plain.wait(count: 3)

        tabs.selection = "elsewhere"
        let feedNode = try #require(host.node(at: "root/content/feed"))
        let receiverNode = try #require(host.node(at: "root/content/onReceive"))
        #expect(feedNode.exists && !feedNode.isVisible)
        #expect(receiverNode.exists && !receiverNode.isVisible)
        for index in 0..<4 { try await bus.post(name: "claim6.item", payload: Array("hidden \(index)".utf8)) }
        await received.wait(count: 7)
        await feedNode.waitForMetrics(within: standardWait) { $0.feedReceived == 7 }
        #expect(feedNode.metrics.missedWhileHidden == 4)

        tabs.selection = "content"
        await plainSubscribed.wait(count: 2)
        try await bus.ready(consumed)
        for index in 0..<2 { try await bus.post(name: "claim6.item", payload: Array("again \(index)".utf8)) }
        await received.wait(count: 9)
        let feedEvents = await fed.wait { notificationTexts($0).count == 5 }
        let plainSeen = await plain.wait(count: 5)

        #expect(received.events.filter { $0.hasPrefix("hidden") }.count == 4)
        #expect(receiverNode.metrics.messagesHandled == 9)
        #expect(!plainSeen.contains { $0.hasPrefix("hidden") })
        #expect(!notificationTexts(feedEvents).contains { $0.hasPrefix("hidden") })
        #expect(feedEvents.contains(.gap(Gap(cause: .missedWhileInactive, count: 4))))
        let feed = feedNode.metrics
        #expect(feed.messagesHandled == 5)
        #expect(feed.missedWhileHidden == 4)
        #expect(feed.gapsDelivered == 1)
        host.unmount()
        await bus.close()
    }

    @Test("6b. In a LazyList, rows scrolled out still receive with onReceive; their task feeds miss; unreached rows do not exist",
          .timeLimit(.minutes(1)))
    func lazyListScrolledOutRows() async throws {
        struct Row: View {
            let index: Int
            let pattern: NamePattern
            let received: EventLog<Int>
            var body: ViewContent {
                ViewContent()
                    .onReceive(pattern) { _ in received.append(index) }
                    .task(subscribing: pattern) { feed in
                        for await _ in feed {}
                    }
            }
        }
        struct List: View {
            @State var window = 0..<5
            let pattern: NamePattern
            let received: EventLog<Int>
            var body: ViewContent {
                .lazyList(rowCount: 100, window: window) { index in
                    Child(ViewID("row-\(index)")) { Row(index: index, pattern: pattern, received: received) }
                }
            }
        }
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let consumed = NamePattern("claim6b.>")
        let received = EventLog<Int>()
        let list = List(pattern: consumed, received: received)
        let root = host.mount(list)
        #expect(root.children.count == 5)

        list.window = 5..<10
        #expect(root.children.count == 10)
        #expect(host.node(at: "root/row-2")?.isVisible == false)
        #expect(host.node(at: "root/row-7")?.isVisible == true)
        #expect(host.node(at: "root/row-50") == nil)
        try await bus.ready(consumed)
        for _ in 0..<3 { try await bus.post(name: "claim6b.item") }
        await received.wait(count: 30)

        for index in 0..<10 {
            let row = try #require(host.node(at: "root/row-\(index)"))
            let metrics = await row.waitForMetrics(within: standardWait) { $0.feedReceived == 3 && $0.messagesHandled >= 3 }
            if index < 5 {
                #expect(metrics.missedWhileHidden == 3, "row \(index) is scrolled out")
                #expect(metrics.messagesHandled == 3, "onReceive only")
            } else {
                #expect(metrics.missedWhileHidden == 0, "row \(index) is in the window")
                await row.waitForMetrics(within: standardWait) { $0.messagesHandled == 6 }
            }
        }
        list.window = 0..<5
        #expect(host.node(at: "root/row-7")?.isVisible == false)
        #expect(host.node(at: "root/row-2")?.isVisible == true)
        host.unmount()
        await bus.close()
    }
}
