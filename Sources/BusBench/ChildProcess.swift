import Foundation
import Subprocess
import Synchronization
import ToolSupport

#if canImport(System)
import System
#else
import SystemPackage
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A child process the benchmark owns: line-oriented stdout (each line seen as it comes), collected
/// stderr, a deadline after which it is stopped, and a stdin pipe whose closing (or the parent's
/// death) makes a cooperating child exit. Every instance is registered in a `ChildGroup`, which
/// stops what is left on any exit path.
///
/// swift-subprocess (`Subprocess.run` with a body) spawns the child, streams its stdout and stderr,
/// monitors it through a pidfd and reports its termination status. Stopping a child is cancelling
/// the task that runs it: Subprocess then runs the teardown sequence, SIGTERM and, if the child is
/// still there after `ChildProcess.termGrace`, SIGKILL, and reaps it. Two needs are met outside it:
///
/// - **stdin** is a pipe of our own (close-on-exec, the read end handed to Subprocess as a file
///   descriptor). Subprocess's `StandardInputWriter` writes from whatever thread its async I/O runs
///   on, so a write to a child that has died would raise SIGPIPE, whose default action kills this
///   process; Subprocess does not ignore it, and ignoring it process-wide would change how the CLI
///   dies on a closed stdout. Our own pipe lets `writeLine` block SIGPIPE on the writing thread only.
/// - **CPU time and peak RSS of a child**: Subprocess reaps with `waitid(2)`, which returns no
///   `rusage`, and exposes none. The workers and `nbus-baseline` measure themselves with
///   `getrusage(RUSAGE_SELF)` and print it in their result line, which also lets them measure over
///   their own window rather than their whole life.
final class ChildProcess: Sendable {
    /// A short name for messages ("raw subscriber").
    let label: String
    private let executable: String
    private let arguments: [String]
    private let lineObserver: (@Sendable (String) -> Void)?
    private let state = Mutex(State())
    /// Set once the child has exited and was reaped, its output read to the end.
    private let exit = OneShot<Termination>()

    /// How long a stopped child gets between SIGTERM and SIGKILL.
    static let termGrace = Duration.milliseconds(500)

    private struct LineWaiter {
        let id: Int
        let predicate: @Sendable (String) -> Bool
        let continuation: CheckedContinuation<String?, Never>
    }

    private struct State {
        var pid: pid_t = 0
        var stdinWriteEnd: Int32 = -1
        var lines: [String] = []
        var stdoutEnded = false
        var stderr: [UInt8] = []
        var termination: Termination?
        var timedOut = false
        var killed = false
        var nextWaiterID = 0
        var lineWaiters: [LineWaiter] = []
        var runner: Task<Void, Never>?
        var watchdog: Task<Void, Never>?
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

    /// `onLine`, if given, sees every stdout line as it arrives (on a reader task: keep it short).
    init(label: String, executable: String, arguments: [String], onLine: (@Sendable (String) -> Void)? = nil) {
        self.label = label
        self.executable = executable
        self.arguments = arguments
        self.lineObserver = onLine
    }

    /// Starts the child and a watchdog that stops it after `timeout`; returns once it runs (its
    /// pid is known) or throws when it cannot be started.
    func start(timeout: Duration) async throws(BenchError) {
        // Subprocess spawns with `posix_spawn_file_actions_addclosefrom_np(3)`, so no child inherits
        // these ends anyway; close-on-exec covers any other spawner in this process.
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw .launchFailed(label: label, reason: "pipe: \(String(cString: strerror(errno)))")
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        state.withLock { $0.stdinWriteEnd = fds[1] }
        let launched = OneShot<Result<pid_t, BenchError>>()
        var platformOptions = PlatformOptions()
        platformOptions.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: Self.termGrace)]
        let configuration = Configuration(
            executable: .path(FilePath(executable)), arguments: Arguments(arguments), platformOptions: platformOptions)
        let stdinReadEnd = FileDescriptor(rawValue: fds[0])
        let runner = Task.detached { [self] in
            do {
                let result = try await Subprocess.run(
                    configuration, input: .fileDescriptor(stdinReadEnd, closeAfterSpawningProcess: true),
                    output: .sequence, error: .sequence
                ) { execution in
                    state.withLock { $0.pid = execution.processIdentifier.value }
                    launched.finish(.success(execution.processIdentifier.value))
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { await self.readLines(execution.standardOutput) }
                        group.addTask { await self.readErrors(execution.standardError) }
                    }
                }
                switch result.terminationStatus {
                case .exited(let code): exited(status: code, bySignal: false)
                case .signaled(let signal): exited(status: signal, bySignal: true)
                }
            } catch {
                launched.finish(.failure(.launchFailed(label: label, reason: "\(error)")))
                // Cancelled (stopped by the benchmark) or the child could not be monitored.
                endStreams()
                exited(status: SIGKILL, bySignal: true)
            }
        }
        state.withLock { $0.runner = runner }
        if case .failure(let error) = await launched.valueIgnoringCancellation() {
            closeStdin()
            throw error
        }
        let watchdog = Task.detached { [self] in
            // Cancelled when the child exits first: the check below then does nothing.
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled && !isFinished { kill(timedOut: true) }
        }
        let exitedAlready = state.withLock { state -> Bool in
            state.watchdog = watchdog
            return state.termination != nil
        }
        if exitedAlready { watchdog.cancel() }
    }

    /// Waits for the first stdout line satisfying `predicate` (including lines already read);
    /// nil when stdout ends first (the child exited, or was stopped at its deadline).
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

    /// Waits until the child has exited and was reaped, its output read to the end.
    /// Waits in a cancelled task too: cleanup after an interrupted benchmark waits for its children.
    func waitForExit() async -> Termination {
        await exit.valueIgnoringCancellation()
    }

    /// Everything the child printed on stdout so far, line by line.
    var stdoutLines: [String] { state.withLock { $0.lines } }

    /// Everything the child printed on stderr so far (the last 64 KiB).
    var stderrText: String { state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    var isFinished: Bool { state.withLock { $0.termination != nil } }

    /// Whether the child's stdout reached end of file.
    var isStdoutEnded: Bool { state.withLock { $0.stdoutEnded } }

    /// Stops the child unless it already exited (SIGTERM, then SIGKILL after `termGrace`), and
    /// closes its stdin. Returns at once; `waitForExit()` says when it is gone.
    func kill(timedOut: Bool = false) {
        let runner = state.withLock { state -> Task<Void, Never>? in
            guard state.termination == nil else { return nil }
            if timedOut { state.timedOut = true } else { state.killed = true }
            return state.runner
        }
        runner?.cancel()
        closeStdin()
    }

    /// Closes the write end of the child's stdin (a cooperating child exits at end of file).
    func closeStdin() {
        let fd = state.withLock { state -> Int32 in
            defer { state.stdinWriteEnd = -1 }
            return state.stdinWriteEnd
        }
        if fd >= 0 { Glibc.close(fd) }
    }

    /// The child's process id (0 before `start()`); only meaningful while it has not exited.
    var pid: pid_t { state.withLock { $0.pid } }

    /// Writes one line to the child's stdin. Returns false when stdin is closed or the child has
    /// gone (a broken pipe: SIGPIPE is blocked on this thread for the write and consumed, so it
    /// never kills this process).
    @discardableResult
    func writeLine(_ line: String) -> Bool {
        state.withLock { state -> Bool in
            guard state.stdinWriteEnd >= 0, state.termination == nil else { return false }
            return Self.writeWithoutSIGPIPE(state.stdinWriteEnd, Array((line + "\n").utf8))
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
        return bytes.withUnsafeBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
    }

    // MARK: Internals

    private func exited(status: Int32, bySignal: Bool) {
        closeStdin()
        let (termination, watchdog) = state.withLock { state in
            let termination = Termination(
                status: status, bySignal: bySignal, timedOut: state.timedOut, killed: state.killed)
            state.termination = termination
            return (termination, state.watchdog)
        }
        watchdog?.cancel()
        exit.finish(termination)
    }

    /// Splits stdout into lines as buffers arrive (no line-length limit: a host's result line
    /// grows with its view count).
    private func readLines(_ output: SubprocessOutputSequence) async {
        var splitter = LineSplitter()
        do {
            for try await buffer in output {
                let lines = buffer.withUnsafeBytes { splitter.textLines(appending: $0) }
                if !lines.isEmpty { deliver(lines) }
            }
        } catch {
            // Cancelled (the child is being stopped) or a read error: stdout ends here.
        }
        if let last = splitter.finish()?.text { deliver([last]) }
        endStreams()
    }

    /// Marks stdout ended and releases its waiters (idempotent).
    private func endStreams() {
        let lineWaiters = state.withLock { state -> [LineWaiter] in
            state.stdoutEnded = true
            defer { state.lineWaiters.removeAll() }
            return state.lineWaiters
        }
        for waiter in lineWaiters { waiter.continuation.resume(returning: nil) }
    }

    private func deliver(_ lines: [String]) {
        if let lineObserver { for line in lines { lineObserver(line) } }
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

    private func readErrors(_ errors: SubprocessOutputSequence) async {
        do {
            for try await buffer in errors {
                state.withLock { state in
                    // Keep the last 64 KiB: enough to show why a child failed.
                    buffer.withUnsafeBytes { state.stderr.append(contentsOf: $0) }
                    if state.stderr.count > 65_536 { state.stderr.removeFirst(state.stderr.count - 65_536) }
                }
            }
        } catch {
            // Cancelled or a read error: what was read is kept.
        }
    }
}

/// The children of one benchmark run; `killAll()` (called on every exit path) leaves none behind.
final class ChildGroup: Sendable {
    private let children = Mutex<[ChildProcess]>([])

    /// Creates, registers and starts a child; `onLine` sees each stdout line as it arrives.
    func start(
        label: String, executable: String, arguments: [String], timeout: Duration,
        onLine: (@Sendable (String) -> Void)? = nil
    ) async throws(BenchError) -> ChildProcess {
        guard FileManager.default.isExecutableFile(atPath: executable) else { throw .executableNotFound(executable) }
        let child = ChildProcess(label: label, executable: executable, arguments: arguments, onLine: onLine)
        children.withLock { $0.append(child) }
        try await child.start(timeout: timeout)
        return child
    }

    /// Stops every child still running (returns at once).
    func killAll() {
        for child in children.withLock({ $0 }) { child.kill() }
    }

    /// Stops every child still running and waits until each has exited and was reaped.
    func stopAll() async {
        let all = children.withLock { $0 }
        for child in all { child.kill() }
        for child in all { _ = await child.waitForExit() }
    }
}
