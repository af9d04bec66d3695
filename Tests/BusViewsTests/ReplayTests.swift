import BusViews
import NotificationBus
import Testing
import TestSupport

/// A task-style consumer with a replay policy, logging every event it is handed.
private struct ReplayingConsumer: View {
    let pattern: NamePattern
    let replay: ReplayPolicy
    let log: EventLog<BusEvent>

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, replay: replay) { feed in
            for await event in feed { log.append(event) }
        }
    }
}

/// What a consumer saw, as text: `gap(n)` for misses, the payload for notifications.
private func transcript(_ events: [BusEvent]) -> [String] {
    events.map { event in
        switch event {
        case .notification(let notification): return "\(notification.name.rawValue)=\(text(notification))"
        case .gap(let gap): return "gap(\(gap.cause), \(gap.count))"
        }
    }
}

@Suite("Replay: what a hidden task-style consumer gets back on reappear", .timeLimit(.minutes(1)))
@MainActor
struct ReplayTests {
    /// Shows the consumer, posts `visible`, hides it, posts `hidden`, shows it again, posts `after`;
    /// returns the consumer's transcript and metrics.
    private func run(
        _ replay: ReplayPolicy, visible: [(String, String)], hidden: [(String, String)], after: [(String, String)]
    ) async throws -> ([String], ViewMetrics) {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let consumed = NamePattern("replay.>")
        let log = EventLog<BusEvent>()
        let tabs = Switcher { ReplayingConsumer(pattern: consumed, replay: replay, log: log) }
        host.mount(tabs)
        let node = try #require(host.node(at: "root/content"))
        try await bus.ready(consumed)
        for (name, payload) in visible { try await bus.post(name: name, payload: Array(payload.utf8)) }
        await log.wait(count: visible.count)

        tabs.selection = "elsewhere"
        for (name, payload) in hidden { try await bus.post(name: name, payload: Array(payload.utf8)) }
        let received = UInt64(visible.count + hidden.count)
        await node.waitForMetrics(within: standardWait) { $0.feedReceived == received }

        tabs.selection = "content"
        for (name, payload) in after { try await bus.post(name: name, payload: Array(payload.utf8)) }
        let total = UInt64(visible.count + hidden.count + after.count)
        let metrics = await node.waitForMetrics(within: standardWait) { $0.feedReceived == total && $0.messagesHandled + $0.missedWhileHidden == total }
        let events = await log.wait { events in
            events.filter { if case .notification = $0 { true } else { false } }.count == Int(metrics.messagesHandled)
        }
        host.unmount()
        await bus.close()
        return (transcript(events), metrics)
    }

    @Test("With .none, what arrives while hidden is counted as missedWhileHidden and reported as one gap",
          .timeLimit(.minutes(1)))
    func noneCountsMisses() async throws {
        let (seen, metrics) = try await run(
            .none, visible: [("replay.a", "1")], hidden: [("replay.a", "2"), ("replay.b", "3"), ("replay.a", "4")],
            after: [("replay.a", "5")])
        #expect(seen == ["replay.a=1", "gap(missedWhileInactive, 3)", "replay.a=5"])
        #expect(metrics.missedWhileHidden == 3)
        #expect(metrics.replayed == 0)
        #expect(metrics.gapsDelivered == 1)
    }

    @Test("With .latest, the latest notification per name is delivered on reappear, before live ones",
          .timeLimit(.minutes(1)))
    func latestPerName() async throws {
        let (seen, metrics) = try await run(
            .latest, visible: [("replay.a", "1")], hidden: [("replay.a", "2"), ("replay.b", "3"), ("replay.a", "4")],
            after: [("replay.a", "5")])
        #expect(seen == ["replay.a=1", "gap(missedWhileInactive, 1)", "replay.b=3", "replay.a=4", "replay.a=5"])
        #expect(metrics.missedWhileHidden == 1)
        #expect(metrics.replayed == 2)
    }

    @Test("With .all(max:), up to max are delivered in order on reappear and the overflow is an in-band gap",
          .timeLimit(.minutes(1)))
    func allWithOverflow() async throws {
        let hidden = (2...6).map { ("replay.x", "\($0)") }
        let (seen, metrics) = try await run(
            .all(max: 3), visible: [("replay.x", "1")], hidden: hidden, after: [("replay.x", "7")])
        #expect(seen == ["replay.x=1", "gap(missedWhileInactive, 2)", "replay.x=4", "replay.x=5", "replay.x=6", "replay.x=7"])
        #expect(metrics.missedWhileHidden == 2)
        #expect(metrics.replayed == 3)
        #expect(metrics.messagesHandled == 5)
    }

    @Test("Accounting is exact: received = handled + missedWhileHidden once drained", .timeLimit(.minutes(1)))
    func accountingIdentity() async throws {
        let hidden = (0..<50).map { ("replay.n\($0 % 7)", "\($0)") }
        let (_, metrics) = try await run(.all(max: 10), visible: [], hidden: hidden, after: [])
        #expect(metrics.feedReceived == 50)
        #expect(metrics.messagesHandled + metrics.missedWhileHidden == 50)
        #expect(metrics.replayed == 10)
    }
}
