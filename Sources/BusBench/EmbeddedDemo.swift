import BusViews
import NotificationBus
import Synchronization

/// The small demo: one process, an embedded (`inproc://`) bus, a `for await` subscriber that
/// prints what it receives decoded. It awaits readiness instead of sleeping past the slow joiner.
package enum EmbeddedDemo {
    /// Posts `count` notifications (`demo.orders.created`/`shipped`) and calls `print` for each line.
    package static func run(count: Int = 5, print: @Sendable (String) -> Void) async throws {
        let bus = try Bus(.embedded(name: "nbus-demo"))
        let pattern = NamePattern("demo.orders.>")
        let orders = try bus.events(named: pattern)
        try await bus.ready(pattern)
        print("subscribed to \(pattern) (ZeroMQ prefix \"\(String(decoding: pattern.subscriptionPrefix, as: UTF8.self))\"), live at the publisher")

        for index in 1...count {
            try await bus.post(
                name: index % 2 == 0 ? "demo.orders.shipped" : "demo.orders.created",
                payload: Array(#"{"order":\#(index)}"#.utf8), headers: ["region": "eu"], contentType: .json)
        }
        var received = 0
        for await event in orders {
            switch event {
            case .notification(let n):
                received += 1
                let headers = n.headers.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                print(
                    "\(n.name) seq=\(n.sequence) publisher=\(ControlNames.hex(n.publisherID)) "
                        + "type=\(n.contentType) headers=[\(headers)] payload=\(String(decoding: n.payload, as: UTF8.self))")
            case .gap(let gap):
                print("lost: \(gap)")
            }
            if received == count { break }
        }
        let stats = orders.stats
        try await retainedViews(bus, print: print)
        await bus.close()
        print("subscription: \(stats)")
    }

    /// Issue 39: a view that appears after the last post. `demo.price.eur` is posted retained
    /// before any view exists; then two views appear, one with `start: .retained` (it shows the
    /// current value at once, marked retained) and one with `start: .now` (it shows nothing until
    /// the next change); then a change reaches both. Each line says what each view shows.
    static func retainedViews(_ bus: Bus, print: @Sendable (String) -> Void) async throws {
        let before = bus.stats.framesReceived
        try await bus.post(name: "demo.price.eur", payload: Array("1.10".utf8), retain: true)
        // Kept once the bus's I/O thread has routed it (counted as received): a view made before
        // that would get it as a live post, not as the current value.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while bus.stats.framesReceived == before, clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        print("posted demo.price.eur = 1.10 (retained), before any view exists")
        let shown = ShownValues()
        let host = await MainActor.run {
            let host = ViewHost(bus: bus)
            host.mount(
                PricePair(
                    current: { shown.set(retained: $0) }, next: { shown.set(now: $0) }))
            return host
        }
        let pattern = NamePattern("demo.price.>")
        try await bus.ready(pattern)
        // The current value was handed to the view's subscription; its onReceive runs on the main actor.
        _ = try await shown.wait { $0.retained != nil }
        let appeared = shown.value
        print("a view appears: start: .retained shows \(appeared.retained ?? "nothing") at once; start: .now shows \(appeared.now ?? "nothing") until the next change")
        try await bus.post(name: "demo.price.eur", payload: Array("1.12".utf8), retain: true)
        let changed = try await shown.wait { $0.retained?.hasPrefix("1.12") == true && $0.now != nil }
        print("a change: start: .retained shows \(changed.retained ?? "nothing"); start: .now shows \(changed.now ?? "nothing")")
        await MainActor.run { host.unmount() }
    }
}

/// Two views of `demo.price.>`: one from the current value, one from the next change.
@MainActor
private struct PricePair: View {
    let current: @Sendable (String) -> Void
    let next: @Sendable (String) -> Void

    var body: ViewContent {
        ViewContent {
            Child("current") { PriceLabel(start: .retained, show: current) }
            Child("next") { PriceLabel(start: .now, show: next) }
        }
    }
}

@MainActor
private struct PriceLabel: View {
    let start: SubscriptionStart
    let show: @Sendable (String) -> Void

    var body: ViewContent {
        ViewContent().onReceive("demo.price.>", start: start) { notification in
            show(String(decoding: notification.payload, as: UTF8.self) + (notification.isRetained ? " (current value, retained)" : " (a change)"))
        }
    }
}

/// What each of the demo's two price views shows, and a bounded wait for a condition on it.
private final class ShownValues: Sendable {
    struct Values: Sendable {
        var retained: String?
        var now: String?
    }

    private let values = Mutex(Values())

    var value: Values { values.withLock { $0 } }
    func set(retained text: String) { values.withLock { $0.retained = text } }
    func set(now text: String) { values.withLock { $0.now = text } }

    /// Polls (every millisecond, at most 5 s): the views' actions run on the main actor, which
    /// says nothing else when it has run them.
    func wait(until condition: (Values) -> Bool) async throws -> Values {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while clock.now < deadline {
            let now = value
            if condition(now) { return now }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw BenchError.setupFailed("the demo's price views did not show \(value)")
    }
}
