// A live subscriber built on BusViews: a 3-tab TabView and a 100-row LazyList consume one feed,
// and a per-style summary is printed once a second. See README.md for how to run it.
import BusViews
import NotificationBus

/// Counts every notification with `onReceive` (renders per message, hidden or not).
struct ReceiverView: View {
    let pattern: NamePattern
    var body: ViewContent { ViewContent().onReceive(pattern) { _ in } }
}

/// A task loop that only touches state for payloads containing `7` (renders per match).
struct FilteringTaskView: View {
    @State var last = ""
    let pattern: NamePattern
    let replay: ReplayPolicy
    var body: ViewContent {
        ViewContent().task(subscribing: pattern, replay: replay) { feed in
            for await notification in feed.notifications where !Task.isCancelled {
                let text = String(decoding: notification.payload, as: UTF8.self)
                if text.contains("7") { last = text }
            }
        }
    }
}

/// One list row: both consumer styles side by side.
struct RowView: View {
    let pattern: NamePattern
    var body: ViewContent {
        ViewContent {
            Child("onReceive") { ReceiverView(pattern: pattern) }
            Child("task") { FilteringTaskView(pattern: pattern, replay: .none) }
        }
    }
}

/// The root: the tab view and the list, made once and kept by the caller to drive them.
struct DemoView: View {
    let tabs: TabsView
    let list: ListView
    var body: ViewContent {
        ViewContent {
            Child("tabs") { tabs }
            Child("list") { list }
        }
    }
}

/// Three tabs, one consumer style each; only the selected one is visible.
struct TabsView: View {
    @State var selection: ViewID = "onReceive"
    let pattern: NamePattern
    var body: ViewContent {
        .tabView(selection: selection) {
            Child("onReceive") { ReceiverView(pattern: pattern) }
            Child("task") { FilteringTaskView(pattern: pattern, replay: .none) }
            Child("replay") { FilteringTaskView(pattern: pattern, replay: .latest) }
        }
    }
}

/// 100 rows, 10 visible at a time; rows scrolled out stay (hidden).
struct ListView: View {
    @State var window = 0..<10
    let pattern: NamePattern
    var body: ViewContent {
        .lazyList(rowCount: 100, window: window) { index in
            Child(ViewID("row-\(index)")) { RowView(pattern: pattern) }
        }
    }
}

@main
struct ViewsDemo {
    @MainActor
    static func main() async throws {
        var arguments = CommandLine.arguments.dropFirst()
        var endpoint = "tcp://127.0.0.1:5551"
        var patternText = "feed.>"
        var seconds = 30
        while let argument = arguments.popFirst() {
            switch argument {
            case "--connect": endpoint = arguments.popFirst() ?? endpoint
            case "--pattern": patternText = arguments.popFirst() ?? patternText
            case "--seconds": seconds = arguments.popFirst().flatMap { Int($0) } ?? seconds
            default:
                print("usage: views-demo [--connect ENDPOINT] [--pattern PATTERN] [--seconds N]")
                return
            }
        }
        let pattern = try NamePattern(patternText)
        let bus = try Bus(BusConfiguration(subscribe: [.connect(endpoint)]))
        let host = ViewHost(bus: bus, defaultBodyCost: .microseconds(50))
        let demo = DemoView(tabs: TabsView(pattern: pattern), list: ListView(pattern: pattern))
        host.mount(demo)
        print("views-demo: \(endpoint) \(pattern), 3 tabs + 100-row list (window of 10), \(seconds) s")
        print(
            "  handled: notifications handed to the views' code; filtered: of those, the ones after which that code "
                + "wrote no state (onReceive here writes nothing, so all of them; the task skips payloads without a 7); "
                + "bodies: body evaluations; missedWhileHidden: arrived while the task's view was hidden, not replayed")
        let tabs: [ViewID] = ["onReceive", "task", "replay"]
        for second in 1...seconds {
            try await Task.sleep(for: .seconds(1))
            printSummary(host, second: second)
            demo.tabs.selection = tabs[second % tabs.count]
            let start = (second * 10) % 100
            demo.list.window = start..<(start + 10)
        }
        host.unmount()
        await bus.close()
    }

    /// Sums metrics by consumer style (the last path component) and prints one line per style.
    @MainActor
    static func printSummary(_ host: ViewHost, second: Int) {
        var byStyle: [String: (views: Int, metrics: ViewMetrics)] = [:]
        for (path, metrics) in host.metricsByPath() {
            guard let style = path.components.last?.rawValue, ["onReceive", "task", "replay"].contains(style) else { continue }
            byStyle[style, default: (0, ViewMetrics())].views += 1
            byStyle[style, default: (0, ViewMetrics())].metrics.add(metrics)
        }
        print("[\(second)s]")
        for style in ["onReceive", "task", "replay"] {
            guard let (views, m) = byStyle[style] else { continue }
            let p99 = m.latency.totalCount == 0 ? 0 : m.latency.valueAtPercentile(99)
            print(
                "  \(style + String(repeating: " ", count: max(0, 9 - style.count))) views=\(views) handled=\(m.messagesHandled) "
                    + "filtered=\(m.messagesFiltered) bodies=\(m.bodyEvaluations) missedWhileHidden=\(m.missedWhileHidden) "
                    + "replayed=\(m.replayed) mainActorBusy=\(m.mainActorBusyNanoseconds / 1_000_000)ms "
                    + "latency.p99=\(p99 / 1_000)µs")
        }
    }
}
