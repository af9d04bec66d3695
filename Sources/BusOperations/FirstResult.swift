/// Runs every one of `tasks` at once and returns the first result that is not nil, cancelling
/// the others; `fallback` when all of them end with nil. The one shape of "whichever happens
/// first" the commands share: a handshake verdict, a responder's readiness or refusal, its stop.
/// A task that is cancelled should return nil promptly (its result is no longer read).
package func firstResult<Result: Sendable>(
    of tasks: [@Sendable () async -> Result?], otherwise fallback: Result
) async -> Result {
    await withTaskGroup(of: Result?.self) { group in
        for task in tasks { group.addTask(operation: task) }
        var first = fallback
        while let next = await group.next() {
            guard let next else { continue }
            first = next
            break
        }
        group.cancelAll()
        return first
    }
}
