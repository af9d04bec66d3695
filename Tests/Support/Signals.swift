import Synchronization
import Testing

/// A one-shot signal a test awaits; `fire()` is idempotent.
public final class Gate: Sendable {
    private let fired = Watched(false)

    public init() {}

    /// Opens the gate: every waiter, now and later, goes on.
    public func fire() { fired.update { $0 = true } }

    /// Whether `fire()` was called.
    public var isFired: Bool { fired.value }

    /// Suspends until the gate is fired; records an issue and goes on when `timeout` passes first.
    public func wait(timeout: Duration = standardWait, sourceLocation: SourceLocation = #_sourceLocation) async {
        if !(await fired.wait(timeout: timeout, until: { $0 })) {
            Issue.record("the gate was not fired within \(timeout)", sourceLocation: sourceLocation)
        }
    }
}

/// Events appended from anywhere; a test awaits a condition on them (resumed by `append`, never
/// polled), bounded by a timeout that records an issue.
public final class EventLog<Event: Sendable>: Sendable {
    private let log = Watched<[Event]>([])

    public init() {}

    /// Adds `event` and resumes the waits it satisfies.
    public func append(_ event: Event) { log.update { $0.append(event) } }

    /// Every event so far, in order.
    public var events: [Event] { log.value }

    /// Returns the events once `condition` holds; after `timeout`, records an issue and returns the
    /// events as they are (so the test's own checks on them fail too).
    @discardableResult
    public func wait(
        timeout: Duration = standardWait, sourceLocation: SourceLocation = #_sourceLocation,
        until condition: @escaping @Sendable ([Event]) -> Bool
    ) async -> [Event] {
        if !(await log.wait(timeout: timeout, until: condition)) {
            Issue.record("the awaited events did not come within \(timeout); got \(events.count)", sourceLocation: sourceLocation)
        }
        return events
    }

    /// Returns once at least `count` events were appended (bounded like `wait(until:)`).
    @discardableResult
    public func wait(
        count: Int, timeout: Duration = standardWait, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> [Event] {
        await wait(timeout: timeout, sourceLocation: sourceLocation) { $0.count >= count }
    }

    /// Whether `condition` came to hold within `timeout` (no issue recorded: the caller decides).
    public func satisfies(
        within timeout: Duration = standardWait, _ condition: @escaping @Sendable ([Event]) -> Bool
    ) async -> Bool {
        await log.wait(timeout: timeout, until: condition)
    }
}
