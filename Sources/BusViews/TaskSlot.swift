/// The `loadingTask` of the task-role article: holds at most one task, so a start while one runs
/// is ignored; `cancel()` (from `onDisappear`, say) cancels it; the slot empties when the task ends.
@MainActor
public final class TaskSlot<Success: Sendable> {
    private var current: Task<Success, any Error>?
    private var generation = 0
    /// Starts ignored because a task was already running.
    public private(set) var startsIgnored = 0

    /// An empty slot.
    public init() {}

    /// Whether the slot holds a running task.
    public var isRunning: Bool { current != nil }

    /// Starts `operation` unless a task is running; returns whether it started.
    @discardableResult
    public func start(
        priority: TaskPriority? = nil,
        @_inheritActorContext _ operation: @escaping @isolated(any) @Sendable () async throws -> Success
    ) -> Bool {
        guard current == nil else {
            startsIgnored += 1
            return false
        }
        generation += 1
        let mine = generation
        let task = Task(priority: priority, operation: operation)
        current = task
        Task { [weak self] in
            _ = await task.result
            self?.taskEnded(mine)
        }
        return true
    }

    /// Cancels the running task (cooperatively) and empties the slot.
    public func cancel() {
        current?.cancel()
        current = nil
        generation += 1
    }

    /// Awaits the running task's value (the slot is empty when this returns); nil when the slot is empty.
    public func value() async throws -> Success? {
        guard let current else { return nil }
        let awaited = generation
        defer { taskEnded(awaited) }
        return try await current.value
    }

    private func taskEnded(_ finished: Int) {
        if finished == generation { current = nil }
    }
}
