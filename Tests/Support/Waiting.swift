import Synchronization
import Testing

/// The default bound on every wait in the tests: far above what any step takes, so only a hang
/// reaches it (and then the test fails with a message instead of hanging).
public let standardWait: Duration = .seconds(30)

/// State shared between threads and tasks that a test awaits a condition on, with a bound.
///
/// The one bounded wait of the tests: `EventLog`, `Gate`, the end-to-end tests' child output and the
/// CURVE tests' authentication log are all built on it. A waiter is resumed by `update` (never
/// polled), or with `false` when its timeout passes. A wait does not end when its task is cancelled:
/// tests hold view tasks on purpose that ignore cancellation, and the bound ends those too.
public final class Watched<State: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
        var timer: Task<Void, Never>?
    }

    private struct Locked {
        var value: State
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private let state: Mutex<Locked>

    public init(_ initial: State) {
        state = Mutex(Locked(value: initial))
    }

    /// The current state.
    public var value: State { state.withLock { $0.value } }

    /// Changes the state and resumes every waiter whose condition now holds.
    public func update(_ body: (inout State) -> Void) {
        let ready: [Waiter] = state.withLock { locked in
            body(&locked.value)
            let value = locked.value
            let due = locked.waiters.filter { $0.value.condition(value) }
            for id in due.keys { locked.waiters.removeValue(forKey: id) }
            return Array(due.values)
        }
        for waiter in ready {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: true)
        }
    }

    /// Suspends until `condition` holds for the state (true) or `timeout` passes (false).
    public func wait(timeout: Duration = standardWait, until condition: @escaping @Sendable (State) -> Bool) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let registered: Bool = state.withLock { locked in
                if condition(locked.value) { return false }
                let id = locked.nextWaiter
                locked.nextWaiter += 1
                var waiter = Waiter(condition: condition, continuation: continuation)
                waiter.timer = Task { [self] in
                    // Cancelled when the condition holds first: then nothing is left to expire.
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    expire(id)
                }
                locked.waiters[id] = waiter
                return true
            }
            if !registered { continuation.resume(returning: true) }
        }
    }

    private func expire(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
    }
}

/// Something a test waited for did not happen within its bound.
public struct TimedOut: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Task where Failure == Never {
    /// The task's value, bounded: when `timeout` passes first (recorded as an issue) or the caller
    /// is cancelled, the task is cancelled, so a consumer looping over a stream ends and its test
    /// fails instead of hanging (a `Task`'s `value` alone waits forever and ignores cancellation).
    public func value(
        within timeout: Duration = standardWait, _ what: @autoclosure () -> String = "a task",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Success {
        let description = what()
        let timer = Task<Void, Never> {
            guard (try? await Task<Never, Never>.sleep(for: timeout)) != nil else { return }
            Issue.record("\(description) did not finish within \(timeout); cancelled", sourceLocation: sourceLocation)
            self.cancel()
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler { await self.value } onCancel: { self.cancel() }
    }
}

extension Task where Failure == Never {
    /// The task's value, or nil when `timeout` passes first; then the task is cancelled and left
    /// behind, so even a wait that ignores cancellation cannot hang the test.
    public func value(orNilAfter timeout: Duration) async -> Success? {
        let outcome = Watched<[Success]>([])
        Task<Void, Never> {
            let value = await self.value
            outcome.update { $0 = [value] }
        }
        if await outcome.wait(timeout: timeout, until: { !$0.isEmpty }) { return outcome.value.first }
        cancel()
        return nil
    }
}

extension Task where Failure == any Error {
    /// The task's value, bounded like `Task<_, Never>.value(within:)`.
    public func value(
        within timeout: Duration = standardWait, _ what: @autoclosure () -> String = "a task",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Success {
        let description = what()
        let timer = Task<Void, Never> {
            guard (try? await Task<Never, Never>.sleep(for: timeout)) != nil else { return }
            Issue.record("\(description) did not finish within \(timeout); cancelled", sourceLocation: sourceLocation)
            self.cancel()
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler { try await self.value } onCancel: { self.cancel() }
    }
}

/// Runs `operation` in a task of its own, bounded: after `timeout` it is cancelled and an issue
/// recorded, so a loop over a stream that never ends fails its test instead of hanging it.
public func withTimeout<T: Sendable>(
    _ timeout: Duration = standardWait, _ what: @autoclosure () -> String = "the operation",
    sourceLocation: SourceLocation = #_sourceLocation, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await Task(operation: operation).value(within: timeout, what(), sourceLocation: sourceLocation)
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
    /// The elements up to and including the first for which `isLast` holds, or, when `timeout`
    /// passes first, an issue and what arrived until then (so the test's own checks fail too).
    public func collect(
        within timeout: Duration = standardWait, sourceLocation: SourceLocation = #_sourceLocation,
        until isLast: @escaping @Sendable (Element) -> Bool
    ) async -> [Element] {
        await Task {
            var elements: [Element] = []
            for await element in self {
                elements.append(element)
                if isLast(element) { break }
            }
            return elements
        }.value(within: timeout, "the stream", sourceLocation: sourceLocation)
    }

    /// The first `count` elements, or fewer and an issue when `timeout` passes first or the stream ends.
    public func first(
        _ count: Int, within timeout: Duration = standardWait, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> [Element] {
        guard count > 0 else { return [] }
        let elements = await Task {
            var elements: [Element] = []
            for await element in self {
                elements.append(element)
                if elements.count == count { break }
            }
            return elements
        }.value(within: timeout, "the stream's first \(count) element(s)", sourceLocation: sourceLocation)
        if elements.count < count {
            Issue.record("expected \(count) element(s), the stream gave \(elements.count)", sourceLocation: sourceLocation)
        }
        return elements
    }
}
