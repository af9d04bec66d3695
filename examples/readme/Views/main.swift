import BusViews
import NotificationBus

struct Ticker: View {
    @State var last = ""
    var body: ViewContent {
        ViewContent()
            .onReceive("feed.>") { n in last = n.name.rawValue }                     // every message renders
            .task(subscribing: "feed.>", replay: .all(max: 100)) { feed in
                for await n in feed.notifications where n.payload.count > 10 { last = n.name.rawValue }
            }                                                                         // renders only on a match
    }
}

let bus = try Bus(.embedded())
let host = ViewHost(bus: bus)                       // main actor, as top-level code is
let node = host.mount(Ticker())
try await bus.ready("feed.>")
try await bus.post(name: "feed.short", payload: Array("hi".utf8))                // task: filtered
try await bus.post(name: "feed.long", payload: Array("a longer payload".utf8))   // both: rendered
// Both consumers got both (4 handled); 3 state writes: two from onReceive, one from the task.
await node.waitForMetrics { $0.messagesHandled >= 4 && $0.stateUpdates >= 3 }
print("handled", node.metrics.messagesHandled, "filtered", node.metrics.messagesFiltered)
host.unmount()
await bus.close()
// Prints "handled 4 filtered 1".
