#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import TestSupport
import Testing
import ToolSupport

// Support for driving real `nbus` processes: finding the binary, a fresh temp folder for ipc
// endpoints, and `Child`, a spawned process whose stdout/stderr are read continuously by their own
// threads (no pipe-buffer deadlock) and whose progress can be awaited with a bound: for a line, for
// a number of lines, for its exit. Nothing here sleeps to synchronise.

enum NBusBinary {
    /// The `nbus` executable built with the tests.
    ///
    /// Order: `NBUS_E2E_BINARY` (to test another build), next to the test bundle (the products
    /// folder `swift test` runs from), then `.build/debug/nbus` in this folder or any parent of it,
    /// or of this source file.
    static func url() throws -> URL {
        let fileManager = FileManager.default
        if let override = ProcessInfo.processInfo.environment["NBUS_E2E_BINARY"], !override.isEmpty {
            guard fileManager.isExecutableFile(atPath: override) else {
                throw TestSetupError("NBUS_E2E_BINARY=\(override) is not an executable file")
            }
            return URL(fileURLWithPath: override)
        }
        var candidates: [URL] = []
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("nbus"))
        // On some platforms the bundle is a folder: .../debug/X.xctest/Contents/MacOS/X.
        var folder = bundle.deletingLastPathComponent()
        for _ in 0..<4 {
            folder = folder.deletingLastPathComponent()
            candidates.append(folder.appendingPathComponent("nbus"))
        }
        for start in [
            URL(fileURLWithPath: fileManager.currentDirectoryPath),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent(),
        ] {
            var directory = start.standardizedFileURL
            while true {
                candidates.append(directory.appendingPathComponent(".build/debug/nbus"))
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
        }
        for candidate in candidates where fileManager.isExecutableFile(atPath: candidate.path) {
            var isDirectory: ObjCBool = false
            if fileManager.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
        }
        throw TestSetupError(
            "the nbus executable was not found; looked next to the test bundle (\(bundle.path)) and for "
                + ".build/debug/nbus upwards from the current folder and this source file. Build it with "
                + "`swift build --build-tests`, or set NBUS_E2E_BINARY.")
    }
}

/// Everything a child has shown so far.
struct ChildOutput: Sendable {
    var stdout = Data()
    var stderr = Data()
    /// When each complete stdout line was read, in wall-clock nanoseconds (the clock of NBP/1's
    /// publish timestamp), so a test can tell how long a notification took to arrive.
    var stdoutLineArrivals: [UInt64] = []
    var stdoutClosed = false
    var stderrClosed = false
    var terminated = false
    /// Exit status, or the signal number when `bySignal`.
    var status: Int32 = 0
    var bySignal = false

    /// Exited and both pipes read to the end.
    var finished: Bool { terminated && stdoutClosed && stderrClosed }
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    /// The complete lines among the last `bytes` bytes of stdout, for a wait's condition: a
    /// condition is evaluated at every read, and one that split the whole output (150,000 lines)
    /// each time made the reader so slow that the child blocked on its stdout.
    func stdoutTailLines(bytes: Int = 16_384) -> [String] {
        let tail = stdout.suffix(bytes)
        var lines = String(decoding: tail, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // the partial line after the last newline (empty when there is none)
        if stdout.count > bytes, !lines.isEmpty { lines.removeFirst() }  // cut at the front
        return lines
    }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    /// Complete lines of stdout (a trailing partial line is left out).
    var stdoutLines: [String] {
        var lines = stdoutText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()
        return lines
    }
    /// One arrival is recorded per newline as it is read, so this is the count without a scan of
    /// the whole output (a waiter evaluates it at every read: scanning made a 150,000-line reader
    /// quadratic, slow enough that the child blocked writing its stdout).
    var completeStdoutLineCount: Int { stdoutLineArrivals.count }
}

/// A spawned process, its output read continuously, its progress awaitable with a bound.
final class Child: @unchecked Sendable {
    let label: String
    let arguments: [String]
    /// The executable's file name, for messages.
    let command: String
    private let executable: URL
    private let directory: String
    private let environment: [String: String]
    private let withStdin: Bool
    /// Set once by `launch`, before any other thread sees the child.
    private let process = Mutex<SpawnedProcess?>(nil)
    /// The write end of the child's standard input, when it has one (closed by `writeStdinAndClose`).
    private let stdinWriter = Mutex<Int32?>(nil)

    /// What the child has shown so far, awaitable with a bound.
    private let state = Watched(ChildOutput())

    init(
        label: String, executable: URL, arguments: [String], directory: String, withStdin: Bool,
        environment: [String: String] = [:]
    ) {
        self.label = label
        self.arguments = arguments
        self.command = executable.lastPathComponent
        self.executable = executable
        self.directory = directory
        self.environment = environment
        self.withStdin = withStdin
    }

    /// Starts the child (posix_spawn, not Foundation's `Process`: see `SpawnedProcess`), its
    /// standard output and error read by threads of their own.
    func launch() throws {
        let stdout = try Pipe2()
        let stderr = try Pipe2()
        let stdin = withStdin ? try Pipe2() : nil
        let spawned: SpawnedProcess
        do {
            spawned = try SpawnedProcess.spawn(
                executable.path, arguments, directory: directory,
                environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
                standardInput: stdin.map { .descriptor($0.reading) } ?? .null,
                standardOutput: .descriptor(stdout.writing), standardError: .descriptor(stderr.writing)
            ) { [self] ended in
                update {
                    $0.terminated = true
                    $0.status = ended.status
                    $0.bySignal = ended.bySignal
                }
            }
        } catch {
            for pipe in [stdout, stderr] + (stdin.map { [$0] } ?? []) { pipe.closeBoth() }
            throw error
        }
        // The child has its copies; the parent keeps only its own ends.
        close(stdout.writing)
        close(stderr.writing)
        if let stdin {
            close(stdin.reading)
            stdinWriter.withLock { $0 = stdin.writing }
        }
        process.withLock { $0 = spawned }
        startReader(stdout.reading, isStdout: true)
        startReader(stderr.reading, isStdout: false)
    }

    var pid: Int32 { process.withLock { $0?.pid } ?? -1 }

    /// What the child has shown so far.
    var output: ChildOutput { state.value }

    /// Writes `text` to the child's standard input and closes it.
    func writeStdinAndClose(_ text: String) throws {
        guard let writer = stdinWriter.withLock({ writer in defer { writer = nil }; return writer }) else {
            throw TestSetupError("\(label) was started without a stdin pipe, or it was closed")
        }
        defer { close(writer) }
        var failure: Int32 = 0
        Array(text.utf8).withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(writer, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { failure = errno; break }
                offset += written
            }
        }
        if failure != 0 { throw TestSetupError("writing to \(label)'s stdin: \(String(cString: strerror(failure)))") }
    }

    /// Sends `signal` unless the child has already been reaped.
    func signal(_ signal: Int32) {
        process.withLock { $0 }?.send(signal)
    }

    /// Suspends until the kernel reports the child stopped (after SIGSTOP) or gone: `waitid` with
    /// `WSTOPPED | WEXITED | WNOWAIT` on a thread of its own, which leaves the state for the reaper.
    /// A signal is delivered asynchronously; this is how a test knows the stop has happened.
    func waitUntilStoppedOrGone() async {
        let pid = self.pid
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                var info = siginfo_t()
                while waitid(P_PID, id_t(pid), &info, WSTOPPED | WEXITED | WNOWAIT) == -1 && errno == EINTR {}
                continuation.resume()
            }
        }
    }

    /// Suspends until `condition` holds for the output or `timeout` passes; returns whether it held.
    @discardableResult
    func wait(timeout: Duration = standardWait, until condition: @escaping @Sendable (ChildOutput) -> Bool) async -> Bool {
        await state.wait(timeout: timeout, until: condition)
    }

    /// Waits for a stdout line containing `text`; returns the line, or nil after `timeout`.
    func waitForStdoutLine(containing text: String, timeout: Duration = standardWait) async -> String? {
        let found = await wait(timeout: timeout) { output in
            output.stdoutLines.contains { $0.contains(text) } || output.stdoutClosed
        }
        guard found else { return nil }
        return output.stdoutLines.first { $0.contains(text) }
    }

    /// Waits until stderr contains `text` (or stderr ends); returns whether it does.
    func waitForStderr(containing text: String, timeout: Duration = standardWait) async -> Bool {
        await wait(timeout: timeout) { $0.stderrText.contains(text) || $0.stderrClosed }
            && output.stderrText.contains(text)
    }

    /// Waits for at least `count` complete stdout lines (or the end of stdout).
    @discardableResult
    func waitForStdoutLines(_ count: Int, timeout: Duration = standardWait) async -> Bool {
        await wait(timeout: timeout) { $0.completeStdoutLineCount >= count || $0.stdoutClosed }
            && output.completeStdoutLineCount >= count
    }

    /// Waits until the child exited and its output was read to the end; nil on timeout.
    func waitForExit(timeout: Duration = standardWait) async -> ChildOutput? {
        await wait(timeout: timeout) { $0.finished } ? output : nil
    }

    /// A description for failure messages: command, status, and the tails of stdout and stderr.
    func describe() -> String {
        let output = self.output
        let status =
            !output.terminated ? "still running" : output.bySignal ? "killed by signal \(output.status)" : "exit \(output.status)"
        return """
            \(label): \(command) \(arguments.joined(separator: " ")) [\(status)]
              stdout (last 600 chars): \(output.stdoutText.suffix(600))
              stderr (last 600 chars): \(output.stderrText.suffix(600))
            """
    }

    private func update(_ body: (inout ChildOutput) -> Void) { state.update(body) }

    private func startReader(_ fd: Int32, isStdout: Bool) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                let now = wallClockNanoseconds()
                update {
                    if isStdout {
                        $0.stdout.append(contentsOf: buffer[0..<count])
                        let newlines = buffer[0..<count].reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
                        $0.stdoutLineArrivals.append(contentsOf: repeatElement(now, count: newlines))
                    } else {
                        $0.stderr.append(contentsOf: buffer[0..<count])
                    }
                }
            }
            update { if isStdout { $0.stdoutClosed = true } else { $0.stderrClosed = true } }
        }
        thread.name = "e2e-\(label)-\(isStdout ? "out" : "err")"
        thread.start()
    }
}

/// `CLOCK_REALTIME` in nanoseconds: the clock `nbus publish` stamps notifications with.
func wallClockNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// Tracks the children a test starts; `killAll()` (in a `defer`) SIGKILLs any still running, on
/// every exit path of the test.
final class Children: Sendable {
    let folder: TempFolder
    /// The `nbus` executable.
    let executable: URL
    private let started = Mutex<[Child]>([])

    init() throws {
        executable = try NBusBinary.url()
        folder = try TempFolder(prefix: "nbus-e2e")
    }

    /// Starts `nbus arguments...` in the temp folder (with `environment` added to this process's).
    func start(
        _ label: String, _ arguments: [String], withStdin: Bool = false, environment: [String: String] = [:]
    ) throws -> Child {
        try start(label, command: executable, arguments, withStdin: withStdin, environment: environment)
    }

    /// Starts another program in the temp folder (`ip netns exec NS nbus ...`), tracked like the others.
    func start(
        _ label: String, command: URL, _ arguments: [String], withStdin: Bool = false, environment: [String: String] = [:]
    ) throws -> Child {
        let child = Child(
            label: label, executable: command, arguments: arguments, directory: folder.path, withStdin: withStdin,
            environment: environment)
        started.withLock { $0.append(child) }
        try child.launch()
        return child
    }

    /// Runs `nbus arguments...` to completion (bounded); records an issue and returns nil on timeout.
    func run(
        _ label: String, _ arguments: [String], timeout: Duration = standardWait,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ChildOutput? {
        let child = try start(label, arguments)
        guard let output = await child.waitForExit(timeout: timeout) else {
            Issue.record("did not exit within \(timeout):\n\(child.describe())", sourceLocation: sourceLocation)
            return nil
        }
        return output
    }

    /// Starts `nbus broker` on `f.sock`/`b.sock` in the temp folder and waits for its banner (it
    /// listens then); records an issue and throws when it does not come.
    func startBroker(
        _ extraArguments: [String] = [], name: String = "broker", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (broker: Child, frontend: String, backend: String) {
        // One pair of sockets per broker name: a restarted broker takes its old endpoints again.
        let suffix = name == "broker" ? "" : "-\(name)"
        let frontend = folder.ipc("f\(suffix).sock")
        let backend = folder.ipc("b\(suffix).sock")
        let broker = try start(name, ["broker", "--frontend", frontend, "--backend", backend] + extraArguments)
        try #require(
            await broker.waitForStdoutLine(containing: "broker: frontend") != nil, "\(broker.describe())",
            sourceLocation: sourceLocation)
        return (broker, frontend, backend)
    }

    /// SIGKILLs every child still running, then removes the temp folder.
    func killAll() {
        for child in started.withLock({ $0 }) { child.signal(SIGKILL) }
        folder.remove()
    }
}

/// One notification line of `nbus subscribe --format json`.
struct ReceivedNotification: Equatable, Sendable {
    var name: String
    var sequence: Int
    var publisherID: String
    var payload: String
    var headers: [String: String]
}

/// Parses `nbus subscribe --format json` output: notifications, and any gap lines (as text).
func parseJSONLines(_ lines: [String]) -> (notifications: [ReceivedNotification], other: [String]) {
    var notifications: [ReceivedNotification] = []
    var other: [String] = []
    for line in lines {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            object["gap"] == nil,
            let name = object["name"] as? String,
            let sequence = (object["sequence"] as? NSNumber)?.intValue,
            let publisherID = object["publisherID"] as? String,
            let payload = object["payload"] as? String
        else {
            other.append(line)
            continue
        }
        let headers = (object["headers"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
        notifications.append(
            ReceivedNotification(name: name, sequence: sequence, publisherID: publisherID, payload: payload, headers: headers))
    }
    return (notifications, other)
}

/// Stops a running `nbus subscribe` with SIGTERM and expects exit 0 (with its summary).
func stopSubscriber(_ subscriber: Child, sourceLocation: SourceLocation = #_sourceLocation) async -> ChildOutput? {
    subscriber.signal(SIGTERM)
    let output = await subscriber.waitForExit()
    expectExit(output, 0, subscriber, sourceLocation: sourceLocation)
    return output
}

/// The peak resident memory of a running process, in kB (`VmHWM`), or nil when it is gone.
func peakMemoryKilobytes(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
    return nil
}

/// The summary `nbus COMMAND` wrote as one JSON object (with `--format json` or `--log-format
/// json`): the last `{"summary":"COMMAND",...}` line of `stderr`, or nil.
func summaryObject(_ stderr: String?, _ command: String) -> [String: Any]? {
    for line in (stderr ?? "").split(separator: "\n").reversed() where line.hasPrefix("{\"summary\":") {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            object["summary"] as? String == command
        else { continue }
        return object
    }
    return nil
}

/// The integer fields `keys` of `nbus COMMAND`'s JSON summary, in order (nil when it has none, -1
/// for a field that is missing or not an integer): `[printed, lostUpstream] == [3, 0]`.
func summaryCounts(_ stderr: String?, _ command: String, _ keys: String...) -> [Int]? {
    guard let object = summaryObject(stderr, command) else { return nil }
    return keys.map { (object[$0] as? NSNumber)?.intValue ?? -1 }
}
