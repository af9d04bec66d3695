import Foundation
import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// What every benchmark worker process shares, so that a worker is only its measurement:
///
/// - results as JSON lines on stdout (`emitJSON`, `emitLine`), written at once (a pipe is not
///   line-buffered), diagnostics on stderr;
/// - control lines from the runner on stdin, read on a thread of their own (a blocked `read` must
///   not hold a cooperative thread); end of file means the runner is gone: exit 3 at once;
/// - a hard deadline, in case the orderly path hangs: exit 4;
/// - a thrown error: its text on stderr, exit status 1.
enum WorkerProcess {
    /// Exit status when stdin reached end of file (the runner is gone).
    static let runnerGoneStatus: Int32 = 3
    /// Exit status at the hard deadline.
    static let hardTimeoutStatus: Int32 = 4

    /// Runs `body` as the worker `kind` in `role` and returns the process's exit status. With
    /// `exitWhenRunnerGone`, end of stdin ends the process; `onControlLine` sees each stdin line
    /// (on the reader thread: keep it short).
    static func run(
        kind: BenchWorkerCommand.Kind, role: String, hardDeadlineSeconds: Int, exitWhenRunnerGone: Bool,
        onControlLine: (@Sendable (String) -> Void)? = nil,
        _ body: () async throws -> Int32
    ) async -> Int32 {
        let name = "nbus bench worker \(kind.rawValue) (\(role))"
        if exitWhenRunnerGone || onControlLine != nil {
            readControlLines(workerName: name, exitAtEnd: exitWhenRunnerGone, onLine: onControlLine ?? { _ in })
        }
        // At most a year: hand-written options may hold anything, and sleep takes a UInt32.
        let deadline = min(max(1, hardDeadlineSeconds), 31_536_000)
        Thread.detachNewThread {
            sleep(UInt32(deadline))
            writeStandardError("\(name): hard timeout after \(deadline) s\n")
            _exit(hardTimeoutStatus)
        }
        do {
            return try await body()
        } catch {
            writeStandardError("\(name): \(error)\n")
            return 1
        }
    }

    /// Writes one line to stdout at once.
    static func emitLine(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Writes `value` as one JSON line to stdout (the runner's `ChildProcess.decode` reads it).
    static func emitJSON(_ value: some Encodable) {
        // A result that cannot be encoded is said on stderr, which the runner shows with its
        // `badOutput` (no result line): never a worker that ends silently without one.
        do {
            emitLine(try ReportJSON.encode(value))
        } catch {
            writeStandardError("cannot encode the result as JSON: \(error)\n")
        }
    }

    /// Writes diagnostics to stderr.
    static func writeStandardError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Reads stdin's lines on a thread of its own; at end of file, with `exitAtEnd`, exits.
    private static func readControlLines(
        workerName: String, exitAtEnd: Bool, onLine: @escaping @Sendable (String) -> Void
    ) {
        Thread.detachNewThread {
            // The runner writes short control lines; 16 MiB bounds a runner gone wrong.
            var lines = FileDescriptorLines(fileDescriptor: STDIN_FILENO, maximumLineBytes: 16 << 20)
            while let line = lines.next() {
                if case .readFailed = line { break }
                if let text = line.text { onLine(text) }
            }
            guard exitAtEnd else { return }
            writeStandardError("\(workerName): stdin closed, exiting\n")
            _exit(runnerGoneStatus)
        }
    }
}
