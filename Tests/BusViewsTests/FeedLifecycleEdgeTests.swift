import BusViews
import NotificationBus
import Testing

/// A task-style consumer whose loop takes one notification and returns while its view stays
/// visible, next to an `onReceive` on another name.
private struct EarlyQuitter: View {
    let quitting: NamePattern
    let other: NamePattern
    let firstLog: EventLog<String>
    let otherLog: EventLog<String>

    var body: ViewContent {
        ViewContent()
            .task(subscribing: quitting, buffering: .suspendProducer(capacity: 4)) { feed in
                for await notification in feed.notifications {
                    firstLog.append(text(notification))
                    break
                }
            }
            .onReceive(other) { notification in otherLog.append(text(notification)) }
    }
}

/// A task-style consumer that keeps everything while hidden.
private struct KeepingConsumer: View {
    let pattern: NamePattern
    let log: EventLog<BusEvent>

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, replay: .all(max: 10)) { feed in
            for await event in feed { log.append(event) }
        }
    }
}

/// Edges of a task-style consumer's lifecycle that a review found miscounted or stalling.
@Suite("Task feeds at the edges of their lifecycle")
@MainActor
struct FeedLifecycleEdgeTests {
    @Test("A loop that ends while its view is visible does not hold the bus back; what follows is counted missed",
          .timeLimit(.minutes(1)))
    func finishedLoopDoesNotStallTheBus() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let quitting = try NamePattern("quit.>")
        let other = try NamePattern("other.>")
        let firstLog = EventLog<String>()
        let otherLog = EventLog<String>()
        host.mount(EarlyQuitter(quitting: quitting, other: other, firstLog: firstLog, otherLog: otherLog))
        let node = try #require(host.node(at: "root"))
        try await bus.ready(quitting)
        try await bus.ready(other)
        // Far more than the feed's capacity of 4: before the fix they queued for nobody and the
        // bus stopped reading for every subscription.
        for i in 1...100 { try await bus.post(name: "quit.a", payload: Array("\(i)".utf8)) }
        for i in 1...10 { try await bus.post(name: "other.b", payload: Array("\(i)".utf8)) }
        #expect(await otherLog.wait(count: 10).count == 10)
        // The node's handled count includes the onReceive's 10: the feed handled 1 and missed 99.
        let metrics = await node.waitForMetrics { $0.feedReceived == 100 && $0.missedWhileHidden == 99 }
        #expect(metrics.messagesHandled == 1 + 10, "\(metrics)")
        #expect(firstLog.events == ["1"])
        host.unmount()
        await bus.close()
    }

    @Test("Removing a view counts what it had kept for replay as missed", .timeLimit(.minutes(1)))
    func removalCountsKeptAsMissed() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let pattern = try NamePattern("kept.>")
        let log = EventLog<BusEvent>()
        let tabs = Switcher { KeepingConsumer(pattern: pattern, log: log) }
        let outer = Conditional { tabs }
        host.mount(outer)
        let node = try #require(host.node(at: "root/content/content"))
        try await bus.ready(pattern)
        tabs.selection = "elsewhere"
        for i in 1...5 { try await bus.post(name: "kept.a", payload: Array("\(i)".utf8)) }
        await node.waitForMetrics { $0.feedReceived == 5 }
        outer.show = false
        let metrics = await node.waitForMetrics { $0.missedWhileHidden == 5 }
        #expect(metrics.messagesHandled == 0 && metrics.replayed == 0, "\(metrics)")
        host.unmount()
        await bus.close()
    }

    @Test("A request pending when the bus closes fails with .closed, not a timeout", .timeLimit(.minutes(1)))
    func requestOnCloseIsClosed() async throws {
        let bus = try Bus(.embedded())
        let service = try NotificationName("service.ask")
        // Seeing the request proves the requester is waiting for its reply.
        let requests = try bus.notifications(named: NamePattern(exactly: service))
        let requesting = Task { () async -> BusError? in
            do {
                _ = try await bus.request(service, timeout: .seconds(30))
                return nil
            } catch {
                return error as? BusError
            }
        }
        for await _ in requests { break }
        await bus.close()
        #expect(await requesting.value == .closed)
    }
}
