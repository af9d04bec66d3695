import Foundation

/// The two children of a pair run and whether the connecting one succeeded.
struct ChildPair: Sendable {
    /// The child that binds and prints `{"event":"bound","endpoint":...}` first.
    let binder: ChildProcess
    /// The child started with the endpoint the binder reported.
    let connector: ChildProcess
    /// False when the connector failed and the caller accepted it (its result line says why).
    let connectorSucceeded: Bool
}

extension ChildGroup {
    /// Starts the binding child, waits for its `bound` line, starts the connecting child with the
    /// endpoint it reported, and waits for both to exit. Whichever fails first takes the other
    /// down, so nobody waits for a timeout; fails with the stderr of the child that failed.
    /// With `acceptFailedConnector`, a connector that exits non-zero by itself (not killed, not
    /// timed out) is returned rather than thrown: its result line reports the problem.
    func runPair(
        binder: (label: String, executable: String, arguments: [String]),
        connector: (label: String, executable: String, arguments: (String) -> [String]),
        timeout: Duration, acceptFailedConnector: Bool = false
    ) async throws -> ChildPair {
        let bound = try await start(
            label: binder.label, executable: binder.executable, arguments: binder.arguments, timeout: timeout)
        guard let line = await bound.waitForLine(where: { $0.contains(#""event":"bound""#) }),
            let endpoint = ChildProcess.decode(BoundLine.self, line)?.endpoint
        else {
            // Its stdout ended (it exited, or its deadline stopped it) or it said something else.
            if !bound.isStdoutEnded { bound.kill() }
            let termination = await bound.waitForExit()
            throw BenchError.childFailed(
                label: bound.label, status: termination.description + ", without reporting its endpoint",
                stderr: bound.stderrText)
        }
        let connecting = try await start(
            label: connector.label, executable: connector.executable, arguments: connector.arguments(endpoint),
            timeout: timeout)
        let binderWatch = Task { () -> ChildProcess.Termination in
            let end = await bound.waitForExit()
            if !end.succeeded { connecting.kill() }
            return end
        }
        let connectorEnd = await connecting.waitForExit()
        if !connectorEnd.succeeded { bound.kill() }
        let binderEnd = await binderWatch.value
        if !binderEnd.succeeded && !binderEnd.killed {
            throw BenchError.childFailed(label: bound.label, status: binderEnd.description, stderr: bound.stderrText)
        }
        if !connectorEnd.succeeded {
            guard acceptFailedConnector, !connectorEnd.timedOut, !connectorEnd.bySignal, !connectorEnd.killed else {
                throw BenchError.childFailed(
                    label: connecting.label, status: connectorEnd.description, stderr: connecting.stderrText)
            }
            return ChildPair(binder: bound, connector: connecting, connectorSucceeded: false)
        }
        return ChildPair(binder: bound, connector: connecting, connectorSucceeded: true)
    }
}

extension ChildProcess {
    /// The last stdout line with `"event":"<event>"` that decodes as `T`.
    func lastResult<T: Decodable>(_ type: T.Type, event: String) -> T? {
        stdoutLines.reversed().lazy
            .filter { $0.contains(#""event":"\#(event)""#) }
            .compactMap { Self.decode(type, $0) }
            .first
    }

    /// The last line with `"event":"<event>"` decoded as `T`, or `badOutput` with what it printed.
    func requireResult<T: Decodable>(_ type: T.Type, event: String) throws(BenchError) -> T {
        guard let result = lastResult(type, event: event) else {
            throw .badOutput(label: label, output: stdoutLines.joined(separator: "\n"), stderr: stderrText)
        }
        return result
    }

    /// One JSON line decoded as `T`, nil when it does not decode.
    static func decode<T: Decodable>(_ type: T.Type, _ line: String) -> T? {
        // A child prints other lines too (progress, other events): one that is not this `T` is
        // skipped by the callers, and a result that never decodes becomes `badOutput` with the
        // whole output (`requireResult`), which says more than the first decoding error would.
        try? JSONDecoder().decode(type, from: Data(line.utf8))
    }
}
