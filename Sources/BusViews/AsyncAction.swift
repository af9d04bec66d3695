/// The AsyncButton of the articles, headless: runs an async action when triggered, disables itself
/// while a run is in flight, and shows progress only once a run has lasted `progressDelay`.
///
/// `onChange` is called on every state change (to update a view's `State`, say).
@MainActor
public final class AsyncAction {
    /// What the action does while running.
    public enum Option: Hashable, Sendable, CaseIterable {
        /// Ignore triggers while a run is in flight (no duplicate runs).
        case disableWhileRunning
        /// Show progress once a run lasts longer than the delay.
        case showProgress
    }

    /// The options in effect (all of them by default, as in the article).
    public let options: Set<Option>
    /// How long a run lasts before progress shows (150 ms by default).
    public let progressDelay: Duration
    /// Runs in flight now.
    public private(set) var runsInFlight = 0
    /// Whether progress is showing.
    public private(set) var isShowingProgress = false
    /// Runs started so far.
    public private(set) var runsStarted = 0
    /// Triggers ignored because the action was disabled.
    public private(set) var triggersIgnored = 0
    /// Called after every change of the state above.
    public var onChange: (@MainActor (AsyncAction) -> Void)?

    private let clock: any Clock<Duration>
    private let action: @MainActor () async -> Void
    private var runs: [Int: Task<Void, Never>] = [:]
    private var progressTimers: [Int: Task<Void, Never>] = [:]
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    /// An action with its options, progress delay and the clock that times the delay.
    public init(
        options: Set<Option> = Set(Option.allCases), progressDelay: Duration = .milliseconds(150),
        clock: any Clock<Duration> = ContinuousClock(), action: @escaping @MainActor () async -> Void
    ) {
        self.options = options
        self.progressDelay = progressDelay
        self.clock = clock
        self.action = action
    }

    /// Whether a run is in flight.
    public var isRunning: Bool { runsInFlight > 0 }

    /// Whether triggers are ignored now (`.disableWhileRunning` and a run in flight).
    public var isDisabled: Bool { options.contains(.disableWhileRunning) && isRunning }

    /// Starts a run unless disabled; returns whether one started.
    @discardableResult
    public func trigger() -> Bool {
        guard !isDisabled else {
            triggersIgnored += 1
            onChange?(self)
            return false
        }
        runsStarted += 1
        runsInFlight += 1
        let run = runsStarted
        if options.contains(.showProgress) {
            let clock = clock
            let delay = progressDelay
            progressTimers[run] = Task { [weak self] in
                do { try await clock.sleep(for: delay) } catch { return }
                self?.progressDelayElapsed()
            }
        }
        let action = action
        runs[run] = Task { [weak self] in
            await action()
            self?.runFinished(run)
        }
        onChange?(self)
        return true
    }

    /// Cancels every run in flight (cooperatively: each ends when its action returns).
    public func cancel() {
        for run in runs.values { run.cancel() }
    }

    /// Returns once no run is in flight.
    public func waitUntilIdle() async {
        guard isRunning else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    private func progressDelayElapsed() {
        guard isRunning, !isShowingProgress else { return }
        isShowingProgress = true
        onChange?(self)
    }

    private func runFinished(_ run: Int) {
        runs[run] = nil
        progressTimers.removeValue(forKey: run)?.cancel()
        runsInFlight -= 1
        if runsInFlight == 0 {
            isShowingProgress = false
            for timer in progressTimers.values { timer.cancel() }
            progressTimers.removeAll()
        }
        onChange?(self)
        if runsInFlight == 0 {
            let waiters = idleWaiters
            idleWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        }
    }
}
