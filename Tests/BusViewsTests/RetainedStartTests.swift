import BusViews
import NotificationBus
import Testing
import TestSupport

/// A task-style consumer logging what it is handed, from where `start` says.
private struct CurrentPriceTask: View {
    let start: SubscriptionStart
    let log: EventLog<String>

    var body: ViewContent {
        ViewContent().task(subscribing: "price.>", start: start) { feed in
            for await event in feed {
                if case .notification(let n) = event { log.append("\(n.name.rawValue)=\(text(n)) \(n.isRetained)") }
            }
        }
    }
}

/// An onReceive-style consumer that shows the last value it got.
private struct CurrentPriceLabel: View {
    @State var shown = "nothing"
    let log: EventLog<String>

    var body: ViewContent {
        log.append("shows \(shown)")
        return ViewContent().onReceive("price.>", start: .retained) { n in shown = "\(text(n)) \(n.isRetained)" }
    }
}

private struct Both: View {
    let current: EventLog<String>
    let next: EventLog<String>

    var body: ViewContent {
        ViewContent {
            Child("current") { CurrentPriceTask(start: .retained, log: current) }
            Child("next") { CurrentPriceTask(start: .now, log: next) }
        }
    }
}

/// A message type that is state: its views start with the current value without `start:`.
private struct EuroPrice: BusAsyncMessage {
    static let busName: NotificationName = "price.eur"
    static let busRetained = true
    var text: String
}

/// An onReceive-style view of the retained type, no `start:` given.
private struct EuroPriceLabel: View {
    @State var shown = "nothing"
    let log: EventLog<String>

    var body: ViewContent {
        log.append("shows \(shown)")
        return ViewContent().onReceive(EuroPrice.self) { price in shown = price.text }
    }
}

@Suite("start: .retained: a view that appears shows the current value at once", .serialized, .timeLimit(.minutes(1)))
@MainActor
struct RetainedStartTests {
    /// A broker keeping retained values over tcp, a publisher that posted `price.eur` = 1.10
    /// (retained) and `price.usd` = 0.90 (retained), and a view bus through the broker.
    private func setUp() async throws -> (Broker, publisher: Bus, viewBus: Bus) {
        var configuration = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        configuration.retainedNames = 100
        let broker = try Broker(configuration)
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        try await publisher.waitForSubscribers(count: 1, matching: "price.eur")
        try await publisher.post(name: "price.eur", payload: Array("1.10".utf8), retain: true)
        try await publisher.post(name: "price.usd", payload: Array("0.90".utf8), retain: true)
        // The broker's own counters say when it kept both (nothing else reports it).
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while await broker.statistics().retainedNames < 2, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await broker.statistics().retainedNames == 2)
        let viewBus = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        return (broker, publisher, viewBus)
    }

    @Test("task(subscribing:start: .retained) starts with the current values, marked, then live ones; .now waits for the next")
    func taskStartsWithCurrentValues() async throws {
        let (broker, publisher, viewBus) = try await setUp()
        let host = ViewHost(bus: viewBus)
        let current = EventLog<String>()
        let next = EventLog<String>()
        host.mount(Both(current: current, next: next))
        try await viewBus.ready("price.>")
        let shown = await current.wait(count: 2)
        #expect(shown == ["price.eur=1.10 true", "price.usd=0.90 true"])
        try await publisher.post(name: "price.eur", payload: Array("1.20".utf8))
        #expect(await current.wait(count: 3).last == "price.eur=1.20 false")
        #expect(await next.wait(count: 1) == ["price.eur=1.20 false"])
        host.unmount()
        let stats = await viewBus.close()
        #expect(stats.retainedReceived == 2 && stats.lostUpstream == 0)
        _ = await publisher.close()
        _ = await broker.stop()
    }

    @Test("onReceive(start: .retained) shows the current value when the view appears, then each change")
    func onReceiveShowsCurrentValue() async throws {
        let (broker, publisher, viewBus) = try await setUp()
        let host = ViewHost(bus: viewBus)
        let log = EventLog<String>()
        host.mount(CurrentPriceLabel(log: log))
        try await viewBus.ready("price.>")
        await log.wait { $0.contains("shows 0.90 true") }
        try await publisher.post(name: "price.eur", payload: Array("1.20".utf8))
        let rendered = await log.wait { $0.last == "shows 1.20 false" }
        #expect(rendered.first == "shows nothing")
        #expect(rendered.contains("shows 1.10 true"))
        host.unmount()
        _ = await viewBus.close()
        _ = await publisher.close()
        _ = await broker.stop()
    }

    @Test("onReceive(Type.self) of a type that declares itself retained shows its current value without start:")
    func retainedTypeShowsCurrentValue() async throws {
        var configuration = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        configuration.retainedNames = 100
        let broker = try Broker(configuration)
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        try await publisher.waitForSubscribers(count: 1, matching: "price.eur")
        try await publisher.post(EuroPrice(text: "1.10"))  // retained: the type says so
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while await broker.statistics().retainedNames < 1, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await broker.statistics().retainedNames == 1)
        let viewBus = try Bus(BusConfiguration(subscribe: [.connect(broker.backendEndpoint)]))
        let host = ViewHost(bus: viewBus)
        let log = EventLog<String>()
        host.mount(EuroPriceLabel(log: log))
        await log.wait { $0.contains("shows 1.10") }
        try await publisher.post(EuroPrice(text: "1.20"))
        let rendered = await log.wait { $0.last == "shows 1.20" }
        #expect(rendered.first == "shows nothing")
        // A clear of the value reaches the typed onReceive as no message: nothing runs, and it is
        // not undecodable; the next post shows as before.
        let node = try #require(host.node(at: "root"))
        try await publisher.clearRetained(name: EuroPrice.busName)
        try await publisher.post(EuroPrice(text: "1.30"))
        let after = await log.wait { $0.last == "shows 1.30" }
        #expect(after.count == rendered.count + 1, "\(after)")
        let metrics = await node.waitForMetrics(within: standardWait) { $0.messagesHandled >= 3 }
        #expect(metrics.undecodable == 0, "\(metrics)")
        host.unmount()
        let stats = await viewBus.close()
        #expect(stats.retainedReceived == 1 && stats.lostUpstream == 0)
        _ = await publisher.close()
        _ = await broker.stop()
    }
}
