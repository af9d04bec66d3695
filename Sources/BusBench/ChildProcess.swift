import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why a benchmark failed: a child process misbehaved, or the accounting does not add up.
public enum BenchError: Error, CustomStringConvertible, Sendable {
    /// The executable to start is missing.
    case executableNotFound(String)
    /// A child could not be started.
    case launchFailed(label: String, reason: String)
    /// A child exited with a failure status, was killed, or timed out; its stderr is attached.
    case childFailed(label: String, status: String, stderr: String)
    /// A child said something unexpected on stdout (or nothing at all).
    case badOutput(label: String, output: String, stderr: String)
    /// Messages were lost or malformed where the benchmark requires none.
    case accountingMismatch(String)
    /// An invalid option combination.
    case invalidOptions(String)

    public var description: String {
        switch self {
        case .executableNotFound(let path):
            return "\(path) not found (build it: swift build -c release --product nbus-baseline)"
        case .launchFailed(let label, let reason):
            return "could not start \(label): \(reason)"
        case .childFailed(let label, let status, let stderr):
            return "\(label) failed (\(status))" + Self.indented(stderr, title: "its stderr")
        case .badOutput(let label, let output, let stderr):
            return "\(label) printed no usable result" + Self.indented(output, title: "its stdout")
                + Self.indented(stderr, title: "its stderr")
        case .accountingMismatch(let details):
            return "ACCOUNTING MISMATCH: \(details)"
        case .invalidOptions(let details):
            return details
        }
    }

    private static func indented(_ text: String, title: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return "; \(title) is empty" }
        let lines = trimmed.split(separator: "\n", omittingEmptySubsequences: false).suffix(40)
        return "\n--- \(title) ---\n" + lines.map { "  " + $0 }.joined(separator: "\n")
    }
}

/// A child process the benchmark owns: line-oriented stdout, collected stderr, a deadline after
/// which it is killed, and a stdin pipe whose closing (or the parent's death) makes a cooperating
/// child exit. Every instance is registered in a `ChildGroup`, which kills what is left on any exit path.
final class ChildProcess: @unchecked Sendable {
    // @unchecked: `Process` and the pipes are configured before `start()` and only read after;
    // everything that changes later lives in `state`, behind a Mutex.

    /// A short name for messages ("raw subscriber").
    let label: String
    private let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let state = Mutex(State())

    private struct LineWaiter {
        let id: Int
        let predicate: @Sendable (String) -> Bool
        let continuation: CheckedContinuation<String?, Never>
    }

    private struct State {
        var pid: pid_t = 0
        var lines: [String] = []
        var stdoutEnded = false
        var stderr: [UInt8] = []
        var stderrEnded = false
        var exitStatus: Int32?
        var exitedBySignal = false
        var timedOut = false
        var killed = false
        var nextWaiterID = 0
        var lineWaiters: [LineWaiter] = []
        var finishWaiters: [CheckedContinuation<Void, Never>] = []
        var watchdog: Task<Void, Never>?
        var stdinClosed = false

        var finished: Bool { exitStatus != nil && stdoutEnded && stderrEnded }
    }

    /// How the child ended.
    struct Termination: Sendable {
        /// Exit status, or the signal number when `bySignal`.
        var status: Int32
        var bySignal: Bool
        var timedOut: Bool
        var killed: Bool

        var succeeded: Bool { status == 0 && !bySignal && !timedOut && !killed }

        var description: String {
            if timedOut { return "timed out and was killed" }
            if killed { return "killed by the benchmark" }
            if bySignal && status == SIGALRM { return "timed out (SIGALRM: its own --timeout)" }
            return bySignal ? "killed by signal \(status)" : "exit status \(status)"
        }
    }

    init(label: String, executable: String, arguments: [String]) {
        self.label = label
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
    }

    /// Starts the child, its stdout/stderr readers, and a watchdog that kills it after `timeout`.
    func start(timeout: Duration) throws(BenchError) {
        process.terminationHandler = { [self] process in
            let status = process.terminationStatus
            let bySignal = process.terminationReason == .uncaughtSignal
            exited(status: status, bySignal: bySignal)
        }
        do {
            try process.run()
        } catch {
            throw .launchFailed(label: label, reason: "\(error)")
        }
        let pid = process.processIdentifier
        state.withLock { $0.pid = pid }
        let stdoutFD = stdoutPipe.fileHandleForReading.fileDescriptor
        let stderrFD = stderrPipe.fileHandleForReading.fileDescriptor
        Thread.detachNewThread { [self] in readLines(from: stdoutFD) }
        Thread.detachNewThread { [self] in readErrors(from: stderrFD) }
        let watchdog = Task.detached { [self] in
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled && !isFinished { kill(timedOut: true) }
        }
        let exitedAlready = state.withLock { state -> Bool in
            state.watchdog = watchdog
            return state.exitStatus != nil
        }
        if exitedAlready { watchdog.cancel() }
    }

    /// Waits for the first stdout line satisfying `predicate` (including lines already read);
    /// nil when stdout ends first (the child exited, or was killed at its deadline).
    func waitForLine(where predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let immediate: String?? = state.withLock { state in
                if let line = state.lines.first(where: predicate) { return .some(line) }
                if state.stdoutEnded { return .some(nil) }
                state.nextWaiterID += 1
                state.lineWaiters.append(LineWaiter(id: state.nextWaiterID, predicate: predicate, continuation: continuation))
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    /// Waits until the child has exited and both output pipes are drained.
    func waitForExit() async -> Termination {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.finished { return true }
                state.finishWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        return state.withLock { state in
            Termination(
                status: state.exitStatus ?? -1, bySignal: state.exitedBySignal, timedOut: state.timedOut,
                killed: state.killed)
        }
    }

    /// Everything the child printed on stdout so far, line by line.
    var stdoutLines: [String] { state.withLock { $0.lines } }

    /// Everything the child printed on stderr so far.
    var stderrText: String { state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    var isFinished: Bool { state.withLock { $0.exitStatus != nil } }

    /// Whether the child's stdout reached end of file.
    var isStdoutEnded: Bool { state.withLock { $0.stdoutEnded } }

    /// Kills the child (SIGKILL) unless it already exited, and closes its stdin.
    func kill(timedOut: Bool = false) {
        let pid = state.withLock { state -> pid_t in
            guard state.exitStatus == nil, state.pid > 0 else { return 0 }
            if timedOut { state.timedOut = true } else { state.killed = true }
            return state.pid
        }
        if pid > 0 { _ = Glibc.kill(pid, SIGKILL) }
        closeStdin()
    }

    /// Closes the write end of the child's stdin (a cooperating child exits at end of file).
    func closeStdin() {
        let close = state.withLock { state -> Bool in
            defer { state.stdinClosed = true }
            return !state.stdinClosed
        }
        if close { try? stdinPipe.fileHandleForWriting.close() }
    }

    /// The child's process id (0 before `start()`); only meaningful while it has not exited.
    var pid: pid_t { state.withLock { $0.pid } }

    /// Writes one line to the child's stdin. Returns false when stdin is closed or the child has
    /// gone (a broken pipe: SIGPIPE is blocked on this thread for the write and consumed, so it
    /// never kills this process).
    @discardableResult
    func writeLine(_ line: String) -> Bool {
        state.withLock { state -> Bool in
            guard !state.stdinClosed, state.exitStatus == nil else { return false }
            let fd = stdinPipe.fileHandleForWriting.fileDescriptor
            return Self.writeWithoutSIGPIPE(fd, Array((line + "\n").utf8))
        }
    }

    private static func writeWithoutSIGPIPE(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer {
            // A write to a closed pipe left SIGPIPE pending on this thread: take it before unblocking.
            var pending = sigset_t()
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var immediately = timespec(tv_sec: 0, tv_nsec: 0)
                _ = sigtimedwait(&pipeSignal, nil, &immediately)
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    // MARK: Internals

    private func exited(status: Int32, bySignal: Bool) {
        let (waiters, watchdog) = state.withLock { state in
            state.exitStatus = status
            state.exitedBySignal = bySignal
            return (takeFinishWaiters(&state), state.watchdog)
        }
        watchdog?.cancel()
        for waiter in waiters { waiter.resume() }
    }

    private func takeFinishWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard state.finished else { return [] }
        defer { state.finishWaiters.removeAll() }
        return state.finishWaiters
    }

    private func readLines(from fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var pending: [UInt8] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            pending.append(contentsOf: buffer[0..<count])
            var lines: [String] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            if !lines.isEmpty { deliver(lines) }
        }
        if !pending.isEmpty { deliver([String(decoding: pending, as: UTF8.self)]) }
        let (lineWaiters, finishWaiters) = state.withLock { state in
            state.stdoutEnded = true
            defer { state.lineWaiters.removeAll() }
            return (state.lineWaiters, takeFinishWaiters(&state))
        }
        for waiter in lineWaiters { waiter.continuation.resume(returning: nil) }
        for waiter in finishWaiters { waiter.resume() }
    }

    private func deliver(_ lines: [String]) {
        let resumed = state.withLock { state -> [(CheckedContinuation<String?, Never>, String)] in
            state.lines.append(contentsOf: lines)
            var resumed: [(CheckedContinuation<String?, Never>, String)] = []
            state.lineWaiters.removeAll { waiter in
                guard let line = lines.first(where: waiter.predicate) else { return false }
                resumed.append((waiter.continuation, line))
                return true
            }
            return resumed
        }
        for (continuation, line) in resumed { continuation.resume(returning: line) }
    }

    private func readErrors(from fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            state.withLock { state in
                // Keep the last 64 KiB: enough to show why a child failed.
                state.stderr.append(contentsOf: buffer[0..<count])
                if state.stderr.count > 65_536 { state.stderr.removeFirst(state.stderr.count - 65_536) }
            }
        }
        let waiters = state.withLock { state in
            state.stderrEnded = true
            return takeFinishWaiters(&state)
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The children of one benchmark run; `killAll()` (called on every exit path) leaves none behind.
final class ChildGroup: Sendable {
    private let children = Mutex<[ChildProcess]>([])

    /// Creates, registers and starts a child.
    func start(
        label: String, executable: String, arguments: [String], timeout: Duration
    ) throws(BenchError) -> ChildProcess {
        guard FileManager.default.isExecutableFile(atPath: executable) else { throw .executableNotFound(executable) }
        let child = ChildProcess(label: label, executable: executable, arguments: arguments)
        children.withLock { $0.append(child) }
        try child.start(timeout: timeout)
        return child
    }

    /// Kills every child still running.
    func killAll() {
        for child in children.withLock({ $0 }) { child.kill() }
    }
}
