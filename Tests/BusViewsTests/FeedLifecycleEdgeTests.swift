import BusViews
import NotificationBus
import Testing
import TestSupport

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

/// A `task(id:subscribing:)` whose first run holds its notification until told to go on, and
/// whose later runs take a notification, wait to be told, then change state.
private struct RestartingConsumer: View {
    @State var id = 0
    @State var last = ""
    let pattern: NamePattern
    let log: EventLog<String>
    let releaseOld: EventLog<Void>
    let releaseNew: EventLog<Void>

    var body: ViewContent {
        ViewContent().task(id: id, subscribing: pattern) { [id] feed in
            for await notification in feed.notifications {
                if id == 0 {
                    log.append("old took \(text(notification))")
                    // Not cancellation-aware on purpose: the old run is still inside its body when
                    // the restart comes, and asks for the next element only afterwards.
                    await releaseOld.wait(count: 1)
                    continue
                }
                log.append("new took \(text(notification))")
                await releaseNew.wait(count: 1)
                last = text(notification)
            }
            if id == 0 { log.append("old ended") }
        }
    }
}

/// Edges of a task-style consumer's lifecycle that a review found miscounted or stalling.
@Suite("Task feeds at the edges of their lifecycle", .timeLimit(.minutes(1)))
@MainActor
struct FeedLifecycleEdgeTests {
    @Test("A loop that ends while its view is visible does not hold the bus back; what follows is counted missed",
          .timeLimit(.minutes(1)))
    func finishedLoopDoesNotStallTheBus() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let quitting = NamePattern("quit.>")
        let other = NamePattern("other.>")
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
        let metrics = await node.waitForMetrics(within: standardWait) { $0.feedReceived == 100 && $0.missedWhileHidden == 99 }
        #expect(metrics.messagesHandled == 1 + 10, "\(metrics)")
        #expect(firstLog.events == ["1"])
        host.unmount()
        await bus.close()
    }

    @Test("Removing a view counts what it had kept for replay as missed", .timeLimit(.minutes(1)))
    func removalCountsKeptAsMissed() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let pattern = NamePattern("kept.>")
        let log = EventLog<BusEvent>()
        let tabs = Switcher { KeepingConsumer(pattern: pattern, log: log) }
        let outer = Conditional { tabs }
        host.mount(outer)
        let node = try #require(host.node(at: "root/content/content"))
        try await bus.ready(pattern)
        tabs.selection = "elsewhere"
        for i in 1...5 { try await bus.post(name: "kept.a", payload: Array("\(i)".utf8)) }
        await node.waitForMetrics(within: standardWait) { $0.feedReceived == 5 }
        outer.show = false
        let metrics = await node.waitForMetrics(within: standardWait) { $0.missedWhileHidden == 5 }
        #expect(metrics.messagesHandled == 0 && metrics.replayed == 0, "\(metrics)")
        host.unmount()
        await bus.close()
    }

    @Test("After a task(id:) restart, the old run's last next() does not close out the new run's notification",
          .timeLimit(.minutes(1)))
    func restartKeepsNewRunsHandling() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let pattern = NamePattern("restart.>")
        let log = EventLog<String>()
        let (releaseOld, releaseNew) = (EventLog<Void>(), EventLog<Void>())
        let view = RestartingConsumer(pattern: pattern, log: log, releaseOld: releaseOld, releaseNew: releaseNew)
        host.mount(view)
        let node = try #require(host.node(at: "root"))
        try await bus.ready(pattern)
        try await bus.post(name: "restart.x", payload: Array("A".utf8))
        await log.wait { $0.contains("old took A") }
        view.id = 1
        try await bus.post(name: "restart.x", payload: Array("E".utf8))
        await log.wait { $0.contains("new took E") }
        // The old run asks once more while the new one is handling E.
        releaseOld.append(())
        await log.wait { $0.contains("old ended") }
        releaseNew.append(())
        // Two state writes: the test's `id` and the new run's `last` for E. The `id` write is not
        // the old run's, so A (which that run wrote nothing for) is filtered: a state write counts
        // only for the consumer that made it.
        let metrics = await node.waitForMetrics(within: standardWait) { $0.stateUpdates == 2 }
        // E is not filtered and has its latency sample. Before the fix, the old run's last next()
        // closed E out as filtered (2 filtered), and E's state update then found nothing to time.
        #expect(metrics.messagesHandled == 2 && metrics.messagesFiltered == 1, "\(metrics)")
        #expect(metrics.latency.totalCount == 1, "\(metrics)")
        host.unmount()
        await bus.close()
    }

    @Test("A request pending when the bus closes fails with .closed, not a timeout", .timeLimit(.minutes(1)))
    func requestOnCloseIsClosed() async throws {
        let bus = try Bus(.embedded())
        let service = NotificationName("service.ask")
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
        #expect(await requests.first(1).count == 1, "the request was not seen")
        await bus.close()
        #expect(await requesting.value(within: .seconds(30)) == .closed)
    }
}
