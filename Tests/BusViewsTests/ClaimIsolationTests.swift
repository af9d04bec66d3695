import BusViews
import NotificationBus
import Testing
import TestSupport

/// A task closure written inside `body`: it inherits the main actor.
private struct MainActorHandler: View {
    let pattern: NamePattern
    let handled: EventLog<Bool>

    var body: ViewContent {
        ViewContent().task(subscribing: pattern) { feed in
            for await _ in feed.notifications {
                MainActor.assertIsolated("a task closure written in body runs on the main actor")
                spin(microseconds: 300)
                handled.append(#isolation === MainActor.shared)
            }
        }
    }
}

/// The article's fix: a handler declared outside `body` and `nonisolated`, passed to `task`.
private struct DetachedHandler: View {
    let pattern: NamePattern
    let handled: EventLog<Bool>
    let progress: AtomicCounter

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, handle)
    }

    nonisolated func handle(_ feed: ViewFeed) async {
        for await _ in feed.notifications {
            spin(microseconds: 300)
            handled.append(#isolation === MainActor.shared)
            progress.increment()
        }
    }
}

@Suite("Article claim 5: where the task closure runs", .timeLimit(.minutes(1)))
@MainActor
struct ClaimIsolationTests {
    @Test("5. A closure written in body runs on the main actor; a nonisolated handler runs off it, and main-actor busy time shows it",
          .timeLimit(.minutes(1)))
    func taskClosureIsolation() async throws {
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let onMain = EventLog<Bool>()
        let offMain = EventLog<Bool>()
        let progress = AtomicCounter()
        let count = 20
        struct Both: View {
            let main: NamePattern
            let detached: NamePattern
            let onMain: EventLog<Bool>
            let offMain: EventLog<Bool>
            let progress: AtomicCounter
            var body: ViewContent {
                ViewContent {
                    Child("main") { MainActorHandler(pattern: main, handled: onMain) }
                    Child("detached") { DetachedHandler(pattern: detached, handled: offMain, progress: progress) }
                }
            }
        }
        host.mount(
            Both(
                main: NamePattern("claim5.main"), detached: NamePattern("claim5.detached"), onMain: onMain,
                offMain: offMain, progress: progress))
        try await bus.ready(NamePattern("claim5.>"))
        for _ in 0..<count { try await bus.post(name: "claim5.main") }
        await onMain.wait(count: count)
        #expect(onMain.events.allSatisfy { $0 })

        // The executor check: hold the main actor and see the detached handler make progress anyway.
        for _ in 0..<count { try await bus.post(name: "claim5.detached") }
        let deadline = Timestamps.monotonicNanoseconds() + 10_000_000_000
        while progress.count < count && Timestamps.monotonicNanoseconds() < deadline {}
        #expect(progress.count == count, "the handler progressed while the main actor was held")
        await offMain.wait(count: count)
        #expect(offMain.events.allSatisfy { !$0 })

        let main = try #require(host.node(at: "root/main"))
        let detached = try #require(host.node(at: "root/detached"))
        let mainMetrics = await main.waitForMetrics(within: standardWait) { $0.handlingNanoseconds >= UInt64(count - 1) * 300_000 }
        let detachedMetrics = await detached.waitForMetrics(within: standardWait) { $0.handlingNanoseconds >= UInt64(count - 1) * 300_000 }
        #expect(mainMetrics.mainActorBusyNanoseconds >= UInt64(count - 1) * 300_000)
        #expect(detachedMetrics.mainActorBusyNanoseconds < 300_000)
        host.unmount()
        await bus.close()
    }
}
