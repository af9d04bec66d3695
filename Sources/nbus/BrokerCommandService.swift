#if canImport(Glibc)
import Glibc
#endif
import BusOperations
import Logging
import NotificationBus
import ServiceLifecycle
import ZeroMQ

/// The running broker: forwards until a graceful shutdown (logging its counters every
/// `statsInterval` seconds when that is positive), then stops and logs its final counters.
struct BrokerCommandService: Service {
    let broker: Broker
    let statsInterval: Double
    /// `--drain`: how long the stop may hand on what the broker holds.
    let drain: Duration
    /// How the final summary is written (`--format`, else as the log).
    let summaryFormat: CommandSummary.Format
    /// Whether CURVE is on (the reports then include the authentication counters).
    let secured: Bool
    let logger: Logger

    func run() async throws {
        let (broker, interval, secured, logger) = (self.broker, statsInterval, self.secured, self.logger)
        // Both waits throw only CancellationError, when the service group itself is cancelled
        // (a second signal): then the broker stops exactly as on a graceful shutdown, below.
        if interval > 0 {
            try? await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: SecondsOption.duration(interval))
                    BrokerCommand.report("stats", await broker.statistics(), secured: secured, logger: logger)
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        // A loop that is well stops within its heartbeat (1 s). One stuck inside libzmq never
        // answers (a SIGTERM was once ignored for 13 minutes): past the grace, exit anyway.
        let stopGrace = drain + Self.stopGrace
        let grace = Task {
            do { try await Task.sleep(for: stopGrace) } catch { return }
            await StuckForwardingWatchdog.exitStuck(
                broker, why: "did not stop within \(stopGrace) of the shutdown request", secured: secured, logger: logger)
        }
        let final = await broker.stop()
        grace.cancel()
        // Not a log line: the summary, the last line on stderr (docs/command-line.md).
        // Written once the --http server has stopped, so nothing follows it.
        let (summary, format) = (BrokerCommand.summary("stopped", final, secured: secured), summaryFormat)
        try await LastWords.atEnd { summary.write(format) }
    }

    /// How long an orderly stop may take, past `--drain`, before the broker exits without it
    /// (status 70).
    static let stopGrace: Duration = .seconds(5)
}
