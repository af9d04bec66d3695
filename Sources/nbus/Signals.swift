#if canImport(Glibc)
import Glibc
#endif
import ToolSupport
import Synchronization
import UnixSignals

/// SIGINT/SIGTERM for the long-running commands, trapped with swift-service-lifecycle's
/// `UnixSignalsSequence`. The first signal goes to whoever waits for it (`wait()`): the command
/// then stops in order. A second one exits at once with status 128 + signal, for when the orderly
/// path is too slow or hangs.
enum TerminationSignals {
    /// The first signal, and the tasks waiting for it.
    static let firstSignal = OneShot<Int32>()

    /// Traps SIGINT and SIGTERM (idempotent) and returns once the trap is in place, so a signal
    /// from then on takes the orderly path rather than the default action. Call it first thing.
    static func install() async {
        await SignalTrap.shared.install()
    }

    /// Suspends until the first SIGINT or SIGTERM (install first) and returns its number; returns
    /// nil if the waiting task is cancelled first (so a task group can always be wound up).
    static func wait() async -> Int32? {
        await firstSignal.value
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
                        // A summary the command already handed in, while its helpers stopped,
                        // is still written: it is what the first signal asked for.
                        try? await LastWords.say(hurried: true)
                        FileWriter.standardError.write("nbus: second signal (\(signal)), exiting now\n")
                        _exit(128 + signal.rawValue)
                    }
                    TerminationSignals.firstSignal.finish(signal.rawValue)
                }
            }
        }
        self.installation = installation
        await installation.value
    }
}
