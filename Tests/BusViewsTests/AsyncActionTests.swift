import BusViews
import Testing
import TestSupport

/// An action that runs until the test releases it (or its task is cancelled).
@MainActor
private final class HeldAction {
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private(set) var started = 0
    private(set) var finishedCancelled = 0
    let startedLog = EventLog<Int>()

    func run() async {
        started += 1
        startedLog.append(started)
        await withTaskCancellationHandler {
            await withCheckedContinuation { waiting.append($0) }
        } onCancel: {
            Task { @MainActor in self.release() }
        }
        if Task.isCancelled { finishedCancelled += 1 }
    }

    func release() {
        let all = waiting
        waiting.removeAll()
        for continuation in all { continuation.resume() }
    }
}

@Suite("AsyncAction: the AsyncButton of the articles", .timeLimit(.minutes(1)))
@MainActor
struct AsyncActionTests {
    @Test("While a run is in flight, a second trigger does not start a second run", .timeLimit(.minutes(1)))
    func noDuplicateRuns() async {
        let held = HeldAction()
        let action = AsyncAction(options: [.disableWhileRunning], clock: ManualClock()) { await held.run() }
        #expect(action.trigger())
        #expect(action.isDisabled)
        #expect(!action.trigger())
        #expect(!action.trigger())
        await held.startedLog.wait(count: 1)
        #expect(action.runsStarted == 1)
        #expect(action.triggersIgnored == 2)

        held.release()
        await action.waitUntilIdle(within: standardWait)
        #expect(!action.isDisabled)
        #expect(held.started == 1)
        #expect(action.trigger())
        await held.startedLog.wait(count: 2)
        held.release()
        await action.waitUntilIdle(within: standardWait)
    }

    @Test("Without .disableWhileRunning, triggers start concurrent runs", .timeLimit(.minutes(1)))
    func concurrentRunsWhenNotDisabled() async {
        let held = HeldAction()
        let action = AsyncAction(options: [], clock: ManualClock()) { await held.run() }
        #expect(action.trigger())
        #expect(action.trigger())
        await held.startedLog.wait(count: 2)
        #expect(action.runsInFlight == 2)
        #expect(!action.isDisabled)
        held.release()
        await action.waitUntilIdle(within: standardWait)
    }

    @Test("Progress shows only once a run has lasted the delay (150 ms by default)", .timeLimit(.minutes(1)))
    func progressAfterDelay() async {
        let clock = ManualClock()
        let held = HeldAction()
        let shown = EventLog<Bool>()
        let action = AsyncAction(clock: clock) { await held.run() }
        #expect(action.progressDelay == .milliseconds(150))
        action.onChange = { shown.append($0.isShowingProgress) }
        action.trigger()
        await clock.sleepsStarted.wait(count: 1)

        clock.advance(by: .milliseconds(149))
        #expect(clock.pendingSleepers == 1)
        #expect(!action.isShowingProgress)

        clock.advance(by: .milliseconds(1))
        await shown.wait { $0.contains(true) }
        #expect(action.isShowingProgress)

        held.release()
        await action.waitUntilIdle(within: standardWait)
        #expect(!action.isShowingProgress)
    }

    @Test("A fast action never flashes progress: its delay is cancelled when it finishes", .timeLimit(.minutes(1)))
    func fastActionNeverShowsProgress() async {
        let clock = ManualClock()
        let shown = EventLog<Bool>()
        let action = AsyncAction(clock: clock) {}
        action.onChange = { shown.append($0.isShowingProgress) }
        action.trigger()
        await action.waitUntilIdle(within: standardWait)
        #expect(clock.pendingSleepers == 0)
        clock.advance(by: .seconds(1))
        #expect(!shown.events.contains(true))
        #expect(!action.isShowingProgress)
    }

    @Test("Without .showProgress, a long run never shows progress", .timeLimit(.minutes(1)))
    func noProgressOption() async {
        let clock = ManualClock()
        let held = HeldAction()
        let action = AsyncAction(options: [.disableWhileRunning], clock: clock) { await held.run() }
        action.trigger()
        await held.startedLog.wait(count: 1)
        #expect(clock.pendingSleepers == 0)
        clock.advance(by: .seconds(1))
        #expect(!action.isShowingProgress)
        held.release()
        await action.waitUntilIdle(within: standardWait)
    }

    @Test("cancel() cancels the run in flight; the action sees the cancellation", .timeLimit(.minutes(1)))
    func cancelStopsTheRun() async {
        let held = HeldAction()
        let action = AsyncAction(clock: ManualClock()) { await held.run() }
        action.trigger()
        await held.startedLog.wait(count: 1)
        action.cancel()
        await action.waitUntilIdle(within: standardWait)
        #expect(held.finishedCancelled == 1)
        #expect(!action.isRunning)
        #expect(!action.isShowingProgress)
    }

    @Test("Progress is timed on real short durations too (default clock)", .timeLimit(.minutes(1)))
    func progressWithRealClock() async {
        let held = HeldAction()
        let shown = EventLog<Bool>()
        let action = AsyncAction(progressDelay: .milliseconds(20)) { await held.run() }
        action.onChange = { shown.append($0.isShowingProgress) }
        let started = ContinuousClock.now
        action.trigger()
        await shown.wait { $0.contains(true) }
        #expect(ContinuousClock.now - started >= .milliseconds(20))
        held.release()
        await action.waitUntilIdle(within: standardWait)
    }
}
