import BusViews
import NotificationBus
import Testing
import TestSupport

/// Counts every notification in an action that touches no state.
private struct SilentReceiver: View {
    let pattern: NamePattern
    let seen: EventLog<String>

    var body: ViewContent {
        ViewContent().onReceive(pattern) { notification in seen.append(notification.name.rawValue) }
    }
}

/// The article's `NotificationHandlerDemo`: a task loop that checks a condition before touching state.
private struct FilteringTaskView: View {
    @State var message = ""
    let pattern: NamePattern
    let done: Gate

    var body: ViewContent {
        ViewContent().task(subscribing: pattern) { feed in
            for await notification in feed.notifications where !Task.isCancelled {
                if notification.name.rawValue.hasSuffix(".done") {
                    done.fire()
                    continue
                }
                let candidate = text(notification)
                if candidate.count > 10 { message = candidate }
            }
        }
    }
}

@Suite("Article claims 1 and 2: onReceive renders per message, a filtering task renders per match", .timeLimit(.minutes(1)))
@MainActor
struct ClaimOnReceiveTests {
    @Test("1. onReceive re-evaluates body for every message, even when the action changes no state",
          .timeLimit(.minutes(1)))
    func onReceiveRendersForEveryMessage() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let seen = EventLog<String>()
        let node = host.mount(SilentReceiver(pattern: NamePattern("claim1.>"), seen: seen))
        #expect(node.metrics.bodyEvaluations == 1)
        try await bus.ready(NamePattern("claim1.>"))

        for index in 0..<20 { try await bus.post(name: "claim1.tick", payload: Array("\(index)".utf8)) }
        await seen.wait(count: 20)

        let metrics = node.metrics
        #expect(metrics.bodyEvaluations == 21)
        #expect(metrics.stateUpdates == 0)
        #expect(metrics.messagesHandled == 20)
        #expect(metrics.messagesFiltered == 20)
        #expect(metrics.latency.totalCount == 20)
        host.unmount()
        await bus.close()
    }

    @Test("2. A task loop that filters before touching state re-evaluates body only for matching messages",
          .timeLimit(.minutes(1)))
    func filteringTaskRendersOnlyForMatches() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let done = Gate()
        let everything = EventLog<String>()
        let filtering = FilteringTaskView(pattern: NamePattern("claim2.>"), done: done)
        struct Pair: View {
            let filtering: FilteringTaskView
            let everything: EventLog<String>
            var body: ViewContent {
                ViewContent {
                    Child("task") { filtering }
                    Child("onReceive") { SilentReceiver(pattern: filtering.pattern, seen: everything) }
                }
            }
        }
        host.mount(Pair(filtering: filtering, everything: everything))
        try await bus.ready(NamePattern("claim2.>"))

        for index in 0..<20 {
            let payload = index % 4 == 0 ? "a long enough message \(index)" : "short \(index)"
            try await bus.post(name: "claim2.message", payload: Array(payload.utf8))
        }
        try await bus.post(name: "claim2.done")
        await done.wait()
        await everything.wait(count: 21)

        let taskNode = try #require(host.node(at: "root/task"))
        // 15 short messages and the "done" fence changed no state (counted once the loop asks for more).
        let task = await taskNode.waitForMetrics(within: standardWait) { $0.messagesHandled == 21 && $0.messagesFiltered == 16 }
        #expect(task.stateUpdates == 5)
        #expect(task.bodyEvaluations == 1 + 5)
        #expect(task.latency.totalCount == 5)
        #expect(filtering.message == "a long enough message 16")

        let receiver = try #require(host.node(at: "root/onReceive")).metrics
        #expect(receiver.bodyEvaluations == 1 + 21)
        host.unmount()
        await bus.close()
    }
}
