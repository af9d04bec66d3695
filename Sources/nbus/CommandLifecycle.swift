import ArgumentParser
import BusOperations
import Logging
import ServiceLifecycle

/// How the long-running commands (`broker`, `publish`, `subscribe`, `reply`) start and stop.
///
/// Each runs as the one service of a `ServiceGroup`. The first SIGINT or SIGTERM triggers the
/// group's graceful shutdown: the service stops taking new work, flushes, prints its report and
/// returns, and the command exits 0. A second SIGINT or SIGTERM exits at once with status
/// 128 + signal (`TerminationSignals`), for when the orderly path is too slow (a publisher
/// waiting for a stopped subscriber to acknowledge its end of stream, a subscriber whose stdout
/// is blocked).
///
/// Why `TerminationSignals` rather than the group's own `gracefulShutdownSignals`: the group
/// stops listening after the first signal, and its `cancellationSignals` must be other signals
/// than the graceful ones, so a second SIGINT/SIGTERM would be swallowed. The trap is also in
/// place before the service is made, so a signal during set-up is orderly too.
enum CommandLifecycle {
    /// Traps SIGINT/SIGTERM, then makes the service (so a signal during set-up is handled too) and
    /// runs it until it returns by itself or a signal shuts it down. Rethrows the service's error
    /// (an `ExitCode` sets the exit status).
    static func run<Command: Service>(name: String, makeService: () async throws -> Command) async throws {
        try await run(name: name) { () async throws -> (Command, [any Service]) in (try await makeService(), []) }
    }

    /// The same with helper services (the --http server, the metrics sampler) beside the command's:
    /// they run until the command's service ends, and a helper that fails (its port taken) ends the
    /// command with its error.
    static func run<Command: Service>(
        name: String, makeServices: () async throws -> (Command, [any Service])
    ) async throws {
        await TerminationSignals.install()
        let service: Command
        let helpers: [any Service]
        do {
            (service, helpers) = try await makeServices()
        } catch let error as MonitoringServerError {
            // Its --http cannot listen: said before the command does anything.
            CommandLog.logger(name).error("\(error)")
            throw ExitCode(2)
        }
        // The service group's own lines in the process's format; its routine ones (debug) only
        // when asked for.
        var logger = CommandLog.logger(name)
        logger.logLevel = CommandLog.level <= .debug ? CommandLog.level : .warning
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: helpers.map {
                    .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                } + [
                    // A command that finishes by itself (its --count reached) ends the group normally;
                    // one that ends with an exit status (an `ExitCode` thrown after its report) too, so
                    // the helpers stop in order, not cancelled: a cancelled --http server logged
                    // "Waiting on child channel: CancellationError()" after the summary, which must be
                    // the last line. The group rethrows the command's error once they have stopped.
                    .init(
                        service: service, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: name)
                ], logger: logger))
        let watcher = Task {
            if await TerminationSignals.wait() != nil { await group.triggerGracefulShutdown() }
        }
        defer { watcher.cancel() }
        do {
            try await group.run()
        } catch let error as MonitoringServerError {
            // The command itself stopped in order (its report is out); the exit says why.
            CommandLog.logger(name).error("\(error)")
            throw ExitCode(2)
        }
    }
}
