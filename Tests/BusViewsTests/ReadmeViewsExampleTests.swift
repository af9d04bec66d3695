import BusViews
import NotificationBus
import TestSupport
import Testing

/// The README's view, as written there.
private struct Ticker: View {
    @State var last = ""
    var body: ViewContent {
        ViewContent()
            .onReceive(try! NamePattern("feed.>")) { n in last = n.name.rawValue }  // every message renders
            .task(subscribing: try! NamePattern("feed.>"), replay: .all(max: 100)) { feed in
                for await n in feed.notifications where n.payload.count > 10 { last = n.name.rawValue }
            }  // renders only on a match
    }
}

@Suite("README views example", .timeLimit(.minutes(1)))
@MainActor
struct ReadmeViewsExampleTests {
    @Test("The README's Ticker view mounts and counts what it handles", .timeLimit(.minutes(1)))
    func tickerRuns() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let node = host.mount(Ticker())
        try await bus.ready(try NamePattern("feed.>"))
        try await bus.post(name: "feed.a", payload: Array("short".utf8))
        try await bus.post(name: "feed.b", payload: Array("long enough payload".utf8))
        await node.waitForMetrics(within: standardWait) { $0.messagesHandled >= 4 }
        #expect(node.metrics.messagesHandled == 4)
        host.unmount()
        await bus.close()
    }
}
