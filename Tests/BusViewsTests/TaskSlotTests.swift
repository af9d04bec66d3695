import BusViews
import NotificationBus
import Testing
import TestSupport

@Suite("TaskSlot: the loadingTask holder of the task-role article", .timeLimit(.minutes(1)))
@MainActor
struct TaskSlotTests {
    @Test("A start while a task runs is ignored, and the value can be awaited", .timeLimit(.minutes(1)))
    func guardedAgainstDuplicates() async throws {
        let slot = TaskSlot<Int>()
        let release = Gate()
        let runs = EventLog<Int>()
        #expect(slot.start {
            runs.append(1)
            await release.wait()
            return 42
        })
        #expect(!slot.start { runs.append(2); return 0 })
        #expect(slot.startsIgnored == 1)
        release.fire()
        #expect(try await slot.value() == 42)
        #expect(runs.events == [1])
    }

    @Test("The slot empties when its task ends, so the next start runs", .timeLimit(.minutes(1)))
    func emptiesWhenDone() async throws {
        let slot = TaskSlot<Int>()
        let ended = EventLog<Int>()
        slot.start { 1 }
        _ = try await slot.value()
        #expect(!slot.isRunning)
        #expect(slot.start { ended.append(2); return 2 })
        #expect(try await slot.value() == 2)
    }

    @Test("Cancelled on disappear: the view's onDisappear cancels the held task", .timeLimit(.minutes(1)))
    func cancelledOnDisappear() async throws {
        struct Profile: View {
            let slot: TaskSlot<Void>
            let outcome: EventLog<Bool>
            var body: ViewContent {
                ViewContent()
                    .onAppear {
                        slot.start {
                            await suspendUntilCancelled()
                            outcome.append(Task.isCancelled)
                        }
                    }
                    .onDisappear { slot.cancel() }
            }
        }
        let bus = try Bus(.embedded())
        let host = ViewHost(bus: bus)
        let slot = TaskSlot<Void>()
        let outcome = EventLog<Bool>()
        let tabs = Switcher { Profile(slot: slot, outcome: outcome) }
        host.mount(tabs)
        #expect(slot.isRunning)
        tabs.selection = "elsewhere"
        #expect(!slot.isRunning)
        #expect(await outcome.wait(count: 1) == [true])
        tabs.selection = "content"
        #expect(slot.isRunning)
        host.unmount()
        await bus.close()
    }
}
