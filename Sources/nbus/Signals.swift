#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// SIGINT/SIGTERM for the long-running commands. The first signal lets them stop in order; a
/// second one exits at once (status 128 + signal), for when the orderly path hangs.
///
/// A `sigaction` handler writes the signal number to a pipe (the self-pipe trick), which works
/// whichever of the process's threads the kernel picks (a `SIG_IGN`-plus-signalfd approach
/// silently loses signals delivered to threads that do not block them). One reader thread turns
/// the pipe into resumed continuations.
enum TerminationSignals {
    /// Installs the handler (idempotent). Call it first thing in `run()`, so an early signal
    /// already takes the orderly path rather than the default action.
    static func install() {
        _ = SignalRelay.shared
    }

    /// Suspends until SIGINT or SIGTERM arrives and returns its number; returns nil if the waiting
    /// task is cancelled first (so a task group can always be wound up).
    static func wait() async -> Int32? {
        await SignalRelay.shared.wait()
    }
}

/// The handler's pipe and the waiters it wakes.
private final class SignalRelay: Sendable {
    static let shared = SignalRelay()

    /// The pipe's write end, used by the handler. `nonisolated(unsafe)`: written once before the
    /// handler is installed, then only read (a plain Int32 read is async-signal-safe).
    nonisolated(unsafe) static var writeEnd: Int32 = -1
    static let count = Atomic<Int>(0)

    private struct State {
        var received: Int32?
        var waiters: [UInt64: CheckedContinuation<Int32?, Never>] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    private init() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        Self.writeEnd = fds[1]
        // Touch the counter now: lazy global initialisation is not async-signal-safe.
        _ = Self.count.load(ordering: .relaxed)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signalNumber in
            if SignalRelay.count.add(1, ordering: .relaxed).newValue > 1 { _exit(128 + signalNumber) }
            var byte = UInt8(truncatingIfNeeded: signalNumber)
            _ = write(SignalRelay.writeEnd, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = Int32(SA_RESTART)
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        let readEnd = fds[0]
        Thread.detachNewThread { [self] in
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) == -1 && errno == EINTR {}
            let waiters = state.withLock { state in
                state.received = Int32(byte)
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters.values { waiter.resume(returning: Int32(byte)) }
        }
    }

    func wait() async -> Int32? {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let immediate: Int32?? = state.withLock { state in
                    if let received = state.received { return .some(received) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if case .some(let value) = immediate { continuation.resume(returning: value) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: nil)
        }
    }
}
