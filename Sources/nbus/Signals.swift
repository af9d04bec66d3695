#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import UnixSignals

/// SIGINT/SIGTERM for the long-running commands, trapped with swift-service-lifecycle's
/// `UnixSignalsSequence`. The first signal goes to whoever waits for it (`wait()`): the command
/// then stops in order. A second one exits at once with status 128 + signal, for when the orderly
/// path is too slow or hangs.
enum TerminationSignals {
    /// Traps SIGINT and SIGTERM (idempotent) and returns once the trap is in place, so a signal
    /// from then on takes the orderly path rather than the default action. Call it first thing.
    static func install() async {
        await SignalTrap.shared.install()
    }

    /// Suspends until the first SIGINT or SIGTERM (install first) and returns its number; returns
    /// nil if the waiting task is cancelled first (so a task group can always be wound up).
    static func wait() async -> Int32? {
        await SignalRelay.shared.wait()
    }
}

/// Installs the process's one trap, once, however many callers ask.
private actor SignalTrap {
    static let shared = SignalTrap()
    private var installation: Task<Void, Never>?

    func install() async {
        if let installation { return await installation.value }
        let installation = Task {
            let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
            Task.detached {
                var count = 0
                for await signal in signals {
                    count += 1
                    if count > 1 {
                        FileWriter.standardError.write("nbus: second signal (\(signal)), exiting now\n")
                        _exit(128 + signal.rawValue)
                    }
                    SignalRelay.shared.deliver(signal.rawValue)
                }
            }
        }
        self.installation = installation
        await installation.value
    }
}

/// The first signal, and the tasks waiting for it.
private final class SignalRelay: Sendable {
    static let shared = SignalRelay()

    private struct State {
        var received: Int32?
        var waiters: [UInt64: CheckedContinuation<Int32?, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    func deliver(_ signal: Int32) {
        let waiters = state.withLock { state in
            state.received = signal
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume(returning: signal) }
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
