import BusViews
import NotificationBus
import Testing
import TestSupport

/// The article's first timer: `while true`, ignoring cancellation (with an escape hatch for the test).
private struct StubbornTimer: View {
    let ticks: EventLog<Bool>
    let stop: Flag

    var body: ViewContent {
        ViewContent().task {
            while true {
                if stop.isSet { return }
                try? await Task.sleep(for: .milliseconds(1))
                ticks.append(Task.isCancelled)
                await Task.yield()
            }
        }
    }
}

/// The article's fixed timer: `while !Task.isCancelled`, with a `defer` as the clean-up.
private struct CooperativeTimer: View {
    let ticks: EventLog<Bool>
    let cleanedUp: EventLog<Int>
    let disappeared: Gate

    var body: ViewContent {
        ViewContent()
            .task {
                defer { cleanedUp.append(ticks.events.count) }
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(1))
                    ticks.append(Task.isCancelled)
                }
            }
            .onDisappear { disappeared.fire() }
    }
}

/// `task(id:)`: logs each run's start and end, and whether the end was a cancellation.
private struct ReloadingView: View {
    enum Event: Equatable, Sendable {
        case started(Int)
        case ended(Int, cancelled: Bool)
    }

    @State var trigger = 0
    @State var unrelated = 0
    let log: EventLog<Event>

    var body: ViewContent {
        ViewContent().task(id: trigger) { [trigger] in
            log.append(.started(trigger))
            await suspendUntilCancelled()
            log.append(.ended(trigger, cancelled: Task.isCancelled))
        }
    }
}

@Suite("Article claims 3 and 4: cooperative cancellation and task(id:)", .timeLimit(.minutes(1)))
@MainActor
struct ClaimTaskLifecycleTests {
    @Test("3a. A `while true` task that ignores cancellation keeps running after its view disappears",
          .timeLimit(.minutes(1)))
    func ignoringLoopOutlivesItsView() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let ticks = EventLog<Bool>()
        let stop = Flag()
        let container = Conditional { StubbornTimer(ticks: ticks, stop: stop) }
        host.mount(container)
        await ticks.wait(count: 2)
        let timer = try #require(host.node(at: "root/content"))

        container.show = false
        #expect(!timer.exists)
        #expect(timer.metrics.tasksCancelled == 1)
        // Five more iterations that saw `Task.isCancelled == true`: the loop did not stop.
        let after = await ticks.wait { events in events.filter { $0 }.count >= 5 }
        #expect(after.filter { $0 }.count >= 5)
        stop.set()
        host.unmount()
        await bus.close()
    }

    @Test("3b. `while !Task.isCancelled` stops when the view disappears, and its `defer` runs then",
          .timeLimit(.minutes(1)))
    func cooperativeLoopStopsAndCleansUp() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let ticks = EventLog<Bool>()
        let cleanedUp = EventLog<Int>()
        let disappeared = Gate()
        let container = Conditional {
            CooperativeTimer(ticks: ticks, cleanedUp: cleanedUp, disappeared: disappeared)
        }
        host.mount(container)
        await ticks.wait(count: 2)
        #expect(cleanedUp.events.isEmpty)

        container.show = false
        await disappeared.wait()
        let ticksAtCleanUp = try #require(await cleanedUp.wait(count: 1).first)
        // After the defer ran, the loop is over: no tick is ever appended again.
        #expect(ticks.events.count == ticksAtCleanUp)
        #expect(ticks.events.filter { $0 }.count <= 1)
        host.unmount()
        await bus.close()
    }

    @Test("4. task(id:) cancels the running task and starts a new one when the id changes, and only then",
          .timeLimit(.minutes(1)))
    func taskIDRestartsOnChange() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let log = EventLog<ReloadingView.Event>()
        let view = ReloadingView(log: log)
        let node = host.mount(view)
        await log.wait { $0.contains(.started(0)) }

        view.unrelated += 1  // a render without an id change does not restart
        #expect(node.metrics.bodyEvaluations == 2)
        #expect(node.metrics.tasksStarted == 1)

        view.trigger = 1
        let events = await log.wait { $0.contains(.ended(0, cancelled: true)) && $0.contains(.started(1)) }
        #expect(events.filter { if case .started = $0 { true } else { false } } == [.started(0), .started(1)])
        #expect(node.metrics.tasksStarted == 2)
        #expect(node.metrics.tasksCancelled == 1)

        host.unmount()
        await log.wait { $0.contains(.ended(1, cancelled: true)) }
        await bus.close()
    }
}
