#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization

/// A child process started with `posix_spawn`, for the places that would use Foundation's
/// `Process`: `nbus bench`'s one `git` call and every test that starts a program.
///
/// Why not `Process`: on Linux, swift-corelibs-foundation's `Process.run()` (Swift 6.3.1) lists
/// `/proc/self/fd` to close descriptors in the child and copies all 256 bytes of each entry's
/// `d_name`, whatever the entry's length; an entry at the end of glibc's 32 KiB `readdir` buffer
/// makes it read past the allocation, and when the next page is unmapped the parent dies with
/// SIGSEGV (fixed upstream by swift-corelibs-foundation pull request 5472, not in this toolchain).
/// The buffer fills once a process holds about 1,300 descriptors, which this package's parallel
/// test phase does (hundreds of sockets): it crashed 2 runs of 3 there, in `memcpy` called from
/// `findMaximumOpenFromProcSelfFD`. Here glibc closes the descriptors instead
/// (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34), and nothing reads `/proc/self/fd`.
///
/// Like `Process`: the child gets a process group of its own (a terminal's Ctrl-C is for the
/// parent, which decides), standard streams not redirected are inherited, and a thread of its
/// own reaps it. Unlike it, the child starts with no signal blocked and every signal's default
/// action, whatever the spawning thread blocks or this process ignores.
package final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// The parent's own stream.
        case inherit
        /// `/dev/null`.
        case null
        /// This descriptor of the parent's (a pipe's end); the parent keeps its copy and closes it.
        case descriptor(Int32)
    }

    /// How the child ended.
    package struct Termination: Sendable, Equatable {
        /// The exit status, or the signal's number when `bySignal`.
        package let status: Int32
        package let bySignal: Bool
    }

    /// Why a child could not be started.
    package struct SpawnError: Error, CustomStringConvertible {
        package let description: String
    }

    package let pid: pid_t
    private let termination = Mutex<Termination?>(nil)
    /// Set once `onExit` has run (after `termination`): `waitUntilExit`'s fast path looks at this,
    /// so that it never returns between the reaping and the end of `onExit`.
    private let exitHandled = Atomic<Bool>(false)
    /// Signalled once by the reaper; each waiter passes it on to the next.
    private let exited = DispatchSemaphore(value: 0)

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `executable` (a path, not searched in `PATH`) with `arguments` (without argv[0]).
    /// `environment` nil: this process's. `onExit` runs on the reaper thread once the child is
    /// reaped, before `waitUntilExit` returns.
    package static func spawn(
        _ executable: String, _ arguments: [String], directory: String? = nil, environment: [String: String]? = nil,
        standardInput: Stream = .null, standardOutput: Stream = .inherit, standardError: Stream = .inherit,
        onExit: (@Sendable (Termination) -> Void)? = nil
    ) throws(SpawnError) -> SpawnedProcess {
        var actions = posix_spawn_file_actions_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else { throw SpawnError(description: "posix_spawn_file_actions_init failed") }
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        guard posix_spawnattr_init(&attributes) == 0 else { throw SpawnError(description: "posix_spawnattr_init failed") }
        defer { posix_spawnattr_destroy(&attributes) }

        for (stream, target) in [(standardInput, STDIN_FILENO), (standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)] {
            let result: Int32
            switch stream {
            case .inherit: result = 0
            case .null: result = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_RDWR, 0)
            case .descriptor(let descriptor): result = posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            }
            guard result == 0 else { throw SpawnError(description: "redirecting descriptor \(target): \(String(cString: strerror(result)))") }
        }
        // Every other descriptor closes in the child (libzmq's sockets, other children's pipes).
        if let closeFrom = Self.closeFrom {
            let result = closeFrom(&actions, 3)
            guard result == 0 else { throw SpawnError(description: "posix_spawn_file_actions_addclosefrom_np: \(String(cString: strerror(result)))") }
        }
        if let directory {
            guard let changeDirectory = Self.changeDirectory else {
                throw SpawnError(description: "this C library cannot set a spawned process's directory (posix_spawn_file_actions_addchdir_np)")
            }
            let result = directory.withCString { changeDirectory(&actions, $0) }
            guard result == 0 else { throw SpawnError(description: "changing to \(directory): \(String(cString: strerror(result)))") }
        }
        // A clean start: the spawning thread's signal mask (a test runner's thread may block
        // SIGTERM) and this process's ignored signals (SIGPIPE) are not the child's.
        var noSignals = sigset_t()
        var everySignal = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&everySignal)
        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        guard posix_spawnattr_setpgroup(&attributes, 0) == 0,
            posix_spawnattr_setsigmask(&attributes, &noSignals) == 0,
            posix_spawnattr_setsigdefault(&attributes, &everySignal) == 0,
            posix_spawnattr_setflags(&attributes, Int16(flags)) == 0
        else { throw SpawnError(description: "posix_spawnattr_setflags failed") }

        let argv = CStringArray([executable] + arguments)
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp = CStringArray(variables)
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv.pointers, envp.pointers)
        guard result == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }
        let process = SpawnedProcess(pid: pid)
        let childPID = pid
        let reaper = Thread {
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(childPID, &status, 0) } while reaped == -1 && errno == EINTR
            // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import (macros). A child
            // something else reaped (ECHILD) ended with a status nobody can know: -1, not 0.
            let signal = status & 0x7f
            let ended =
                reaped == -1
                ? Termination(status: -1, bySignal: false)
                : signal != 0 && signal != 0x7f
                    ? Termination(status: signal, bySignal: true) : Termination(status: (status >> 8) & 0xff, bySignal: false)
            process.termination.withLock { $0 = ended }
            onExit?(ended)
            process.exitHandled.store(true, ordering: .releasing)
            process.exited.signal()
        }
        reaper.name = "reaper-\(pid)"
        reaper.start()
        return process
    }

    /// How the child ended, or nil while it runs (or before its reaper saw it end).
    package var terminated: Termination? { termination.withLock { $0 } }

    package var isRunning: Bool { terminated == nil }

    /// Blocks until the child ended and was reaped.
    @discardableResult
    package func waitUntilExit() -> Termination {
        if exitHandled.load(ordering: .acquiring), let ended = terminated { return ended }
        exited.wait()
        exited.signal()  // for the next waiter
        return terminated ?? Termination(status: -1, bySignal: false)
    }

    /// Sends `signal` unless the child was already reaped (its pid may then be another process's).
    package func send(_ signal: Int32) {
        termination.withLock { ended in
            if ended == nil { _ = kill(pid, signal) }
        }
    }

    /// Runs `executable` to its end with standard input empty and returns its exit (a signal's
    /// number counts as a failure) and its standard output; standard error is discarded unless
    /// `mergingStandardError`. `input` is written to its standard input first, when given.
    package static func run(
        _ executable: String, _ arguments: [String], input: String? = nil, mergingStandardError: Bool = false
    ) throws(SpawnError) -> (status: Int32, output: String) {
        let output = try Pipe2()
        let inputPipe = try input.map { _ throws(SpawnError) in try Pipe2() }
        let process: SpawnedProcess
        do {
            process = try spawn(
                executable, arguments, standardInput: inputPipe.map { .descriptor($0.reading) } ?? .null,
                standardOutput: .descriptor(output.writing), standardError: mergingStandardError ? .descriptor(output.writing) : .null)
        } catch {
            output.closeBoth()
            inputPipe?.closeBoth()
            throw error
        }
        close(output.writing)
        if let inputPipe, let input {
            close(inputPipe.reading)
            // Written before reading: the inputs here are small (a pipe holds 64 KiB).
            Array(input.utf8).withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(inputPipe.writing, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(inputPipe.writing)
        }
        let data = readToEnd(output.reading)
        close(output.reading)
        let ended = process.waitUntilExit()
        return (ended.bySignal ? 128 + ended.status : ended.status, String(decoding: data, as: UTF8.self))
    }

    /// Reads `descriptor` until its end.
    package static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    private typealias FileActionsInt = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias FileActionsPath = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    // glibc declares these only under _GNU_SOURCE, which Swift's Glibc module does not define:
    // looked up once by name (glibc 2.34 and 2.29).
    private static let closeFrom: FileActionsInt? = symbol("posix_spawn_file_actions_addclosefrom_np")
    private static let changeDirectory: FileActionsPath? = symbol("posix_spawn_file_actions_addchdir_np")

    private static func symbol<Function>(_ name: String) -> Function? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: Function.self)
    }
}

/// NUL-terminated C strings and the NULL-terminated array of them that `posix_spawn` takes.
private final class CStringArray {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { pointers[index] = strdup(string) }
        pointers[strings.count] = nil
    }

    deinit {
        for index in 0..<count { free(pointers[index]) }
        pointers.deallocate()
    }
}
