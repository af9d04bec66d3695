#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// SIGINT/SIGTERM as an async wait. The first signal is returned for an orderly shutdown; a
/// second one exits at once (status 128 + signal), for when the orderly path hangs.
///
/// A `sigaction` handler writes the signal number to a pipe (the self-pipe trick), so it works
/// whichever of the process's many threads the kernel picks; a `SIG_IGN`-plus-signalfd approach
/// silently loses signals delivered to threads that do not block them.
enum TerminationSignals {
    /// Suspends until SIGINT or SIGTERM arrives; returns the signal number.
    static func wait() async -> Int32 {
        let readEnd = SignalPipe.install()
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var signalNumber: UInt8 = 0
                while read(readEnd, &signalNumber, 1) == -1 && errno == EINTR {}
                continuation.resume(returning: Int32(signalNumber))
            }
        }
    }
}

/// The pipe and handler behind `TerminationSignals`, installed once per process.
private enum SignalPipe {
    /// The write end, read by the handler. `nonisolated(unsafe)`: written once, before the handler is
    /// installed, and only read afterwards (async-signal-safe reads of a plain Int32).
    nonisolated(unsafe) static var writeEnd: Int32 = -1
    static let received = Atomic<Int>(0)
    private static let readEnd: Int32 = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return -1 }
        writeEnd = fds[1]
        // Initialise the counter here: lazy global initialisation is not async-signal-safe.
        _ = received.load(ordering: .relaxed)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signalNumber in
            if SignalPipe.received.add(1, ordering: .relaxed).newValue > 1 { _exit(128 + signalNumber) }
            var byte = UInt8(truncatingIfNeeded: signalNumber)
            _ = write(SignalPipe.writeEnd, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = Int32(SA_RESTART)
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        return fds[0]
    }()

    static func install() -> Int32 { readEnd }
}
