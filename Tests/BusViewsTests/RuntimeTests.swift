import BusViews
import NotificationBus
import Testing
import TestSupport

/// A view whose body costs a fixed amount of busy work and re-renders on `ticks`.
private struct CostlyView: View {
    @State var ticks = 0
    let cost: Duration

    var body: ViewContent {
        _ = ticks
        return ViewContent().bodyCost(cost)
    }
}

/// Logs appear and disappear.
private struct LifecycleView: View {
    let log: EventLog<String>
    var body: ViewContent {
        ViewContent()
            .onAppear { log.append("appear") }
            .onDisappear { log.append("disappear") }
    }
}

@Suite("Runtime: body cost, state, lifecycle", .timeLimit(.minutes(1)))
@MainActor
struct RuntimeTests {
    @Test("Each body evaluation costs the configured busy work, measured on the monotonic clock",
          .timeLimit(.minutes(1)))
    func bodyCostIsSpent() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let view = CostlyView(cost: .milliseconds(2))
        let node = host.mount(view)
        for _ in 0..<4 { view.ticks += 1 }
        let metrics = node.metrics
        #expect(metrics.bodyEvaluations == 5)
        #expect(metrics.stateUpdates == 4)
        #expect(metrics.bodyNanoseconds >= 5 * 2_000_000)
        #expect(metrics.mainActorBusyNanoseconds >= metrics.bodyNanoseconds)
        host.unmount()
        await bus.close()
    }

    @Test("The host's default body cost applies when the content sets none", .timeLimit(.minutes(1)))
    func defaultBodyCost() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus, defaultBodyCost: .milliseconds(3))
        let node = host.mount(EmptyView())
        #expect(node.metrics.bodyNanoseconds >= 3_000_000)
        host.unmount()
        await bus.close()
    }

    @Test("onAppear and onDisappear follow visibility: a hidden tab disappears but still exists",
          .timeLimit(.minutes(1)))
    func appearDisappearFollowVisibility() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let log = EventLog<String>()
        let tabs = Switcher { LifecycleView(log: log) }
        host.mount(tabs)
        let node = try #require(host.node(at: "root/content"))
        #expect(log.events == ["appear"])
        tabs.selection = "elsewhere"
        #expect(log.events == ["appear", "disappear"])
        #expect(node.exists && !node.isVisible)
        tabs.selection = "content"
        #expect(log.events == ["appear", "disappear", "appear"])
        #expect(node.isVisible)
        #expect(node.metrics.appearances == 2)
        #expect(node.metrics.disappearances == 1)
        host.unmount()
        #expect(log.events.last == "disappear")
        #expect(!node.exists)
        await bus.close()
    }

    @Test("State survives while the view exists and is fresh after conditional content recreates it",
          .timeLimit(.minutes(1)))
    func stateLivesWithTheNode() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let made = EventLog<Int>()
        let container = Conditional {
            made.append(made.events.count + 1)
            return CostlyView(cost: .zero)
        }
        host.mount(container)
        let first = try #require(host.node(at: "root/content"))
        container.show = false
        container.show = true
        let second = try #require(host.node(at: "root/content"))
        #expect(first !== second)
        #expect(made.events == [1, 2])
        #expect(second.metrics.bodyEvaluations == 1)
        host.unmount()
        await bus.close()
    }
}
