#if canImport(Glibc)
import Glibc
#endif
import BusOperations
import Logging
import NotificationBus
import ServiceLifecycle
import ZeroMQ

/// Exits the process (status 70) when the broker's forwarding loop has not begun a round for
/// `limit` of the time the process ran (`StuckLoopJudge`: a SIGSTOP's pause is not the loop's),
/// so that a supervisor restarts it.
///
/// The loop cannot be freed from outside: it is inside a libzmq call, which processes every
/// command pending for its socket before it returns, and subscribers leaving faster than that
/// thread walks the backend's subscriptions (libzmq 4.3 walks every one at each departure, and
/// each unique presence topic adds some 20 nodes) grow that queue without end: 1,000 subscribers
/// replacing 500 a second kept it there for the whole storm and long after. Meanwhile nothing is
/// forwarded and no end-of-stream record is replayed, so a subscriber cannot learn what it
/// misses. Exiting drops every connection at once (the kernel closes them, no walk), and a
/// restarted broker starts empty; publishers and subscribers reconnect by themselves, and the
/// subscribers count the gap from the next notification or the end-of-stream record.
struct StuckForwardingWatchdog: Service {
    let broker: Broker
    let limit: Duration
    let secured: Bool
    let logger: Logger

    /// The exit status of a broker whose forwarding loop was stuck (EX_SOFTWARE).
    static let exitStatus: Int32 = 70

    func run() async throws {
        // Checked four times per heartbeat: the exit comes within a quarter second of the limit.
        let interval = Broker.forwardingHeartbeat / 4
        // Throws only CancellationError (the group is stopping): the watch simply ends.
        let clock = ContinuousClock()
        try? await cancelWhenGracefulShutdown {
            // A pause of the whole process (SIGSTOP) is not the loop's: StuckLoopJudge excuses it.
            var judge = StuckLoopJudge(limit: limit)
            while true {
                let asleep = clock.now
                try await Task.sleep(for: interval)
                let overslept = max(.zero, clock.now - asleep - interval)
                if case .stuck(let age) = judge.wokeUp(loopAge: broker.forwardingLoopAge(), overslept: overslept) {
                    let seconds = (Timestamps.seconds(age) * 10).rounded() / 10
                    await Self.exitStuck(
                        broker, why: "has not run for \(seconds) s (--stuck-exit \(Timestamps.seconds(limit)))", secured: secured,
                        logger: logger)
                }
            }
        }
    }

    /// Logs why and the last counters, then exits with `exitStatus` without waiting for the loop.
    static func exitStuck(_ broker: Broker, why: String, secured: Bool, logger: Logger) async -> Never {
        let text =
            "broker: the forwarding loop \(why), stuck inside libzmq (a storm of subscribers connecting and leaving can "
            + "keep it there): exiting with status \(exitStatus) for a supervisor to restart the broker; its peers reconnect "
            + "and subscribers count what they missed"
        logger.critical("\(text)")
        BrokerCommand.report("stuck", await broker.statistics(), secured: secured, logger: logger)
        _exit(exitStatus)
    }
}
