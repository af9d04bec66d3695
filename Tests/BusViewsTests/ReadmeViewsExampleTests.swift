import BusViews
import NotificationBus
import TestSupport
import Testing

/// The README's view, as written there.
private struct Ticker: View {
    @State var last = ""
    var body: ViewContent {
        ViewContent()
            .onReceive("feed.>") { n in last = n.name.rawValue }  // every message renders
            .task(subscribing: "feed.>", replay: .all(max: 100)) { feed in
                for await n in feed.notifications where n.payload.count > 10 { last = n.name.rawValue }
            }  // renders only on a match
    }
}

/// The README's task alone: the reference for what the task filters out.
private struct TaskOnlyTicker: View {
    @State var last = ""
    var body: ViewContent {
        ViewContent()
            .task(subscribing: "feed.>", replay: .all(max: 100)) { feed in
                for await n in feed.notifications where n.payload.count > 10 { last = n.name.rawValue }
            }
    }
}

@Suite("README views example", .timeLimit(.minutes(2)))
@MainActor
struct ReadmeViewsExampleTests {
    @Test("The README's Ticker view mounts and counts what it handles", .timeLimit(.minutes(1)))
    func tickerRuns() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let node = host.mount(Ticker())
        try await bus.ready(NamePattern("feed.>"))
        try await bus.post(name: "feed.a", payload: Array("short".utf8))
        try await bus.post(name: "feed.b", payload: Array("long enough payload".utf8))
        await node.waitForMetrics(within: standardWait) { $0.messagesHandled >= 4 }
        #expect(node.metrics.messagesHandled == 4)
        host.unmount()
        await bus.close()
    }

    /// Ten posts, five of which fail the task's `where`: `filtered` counts exactly those five, run
    /// after run. It used to vary (0 to 5) because the `onReceive` action's state writes were
    /// credited to whatever notification the task happened to be holding at that moment.
    /// The last post passes the filter, so the task's state write for it (the 15th state update:
    /// 10 from onReceive, 5 from the task) comes after every filtered notification was closed.
    @Test("The README's Ticker counts filtered exactly, over many runs", .timeLimit(.minutes(2)))
    func tickerFilteredIsExact() async throws {
        for run in 0..<40 {
            let (filtered, handled, updates) = try await Self.runTicker(Ticker(), expectedUpdates: 15, expectedHandled: 20)
            #expect(filtered == 5, "run \(run): filtered \(filtered) (handled \(handled), state updates \(updates))")
            #expect(handled == 20)
            if filtered != 5 { break }
        }
    }

    @Test("The README's task alone filters the same five", .timeLimit(.minutes(1)))
    func taskOnlyFiltered() async throws {
        for run in 0..<10 {
            let (filtered, handled, _) = try await Self.runTicker(TaskOnlyTicker(), expectedUpdates: 5, expectedHandled: 10)
            #expect(filtered == 5, "run \(run)")
            #expect(handled == 10)
        }
    }

    /// Posts 10 notifications alternating short (filtered by the task) and long, ending with a long
    /// one; returns the view's filtered, handled and state-update counts once every update is in.
    private static func runTicker(
        _ view: some View, expectedUpdates: UInt64, expectedHandled: UInt64
    ) async throws -> (UInt64, UInt64, UInt64) {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let node = host.mount(view)
        try await bus.ready(NamePattern("feed.>"))
        for index in 0..<10 {
            let payload = index % 2 == 0 ? "short" : "long enough payload"
            try await bus.post(name: "feed.n\(index)", payload: Array(payload.utf8))
        }
        await node.waitForMetrics(within: standardWait) { $0.stateUpdates >= expectedUpdates && $0.messagesHandled >= expectedHandled }
        await Task.yield()
        let metrics = node.metrics
        host.unmount()
        await bus.close()
        return (metrics.messagesFiltered, metrics.messagesHandled, metrics.stateUpdates)
    }
}
