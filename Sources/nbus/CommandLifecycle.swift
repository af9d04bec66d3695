import ArgumentParser
import BusOperations
import Logging
import ServiceLifecycle
import Synchronization

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
    /// Whether `run` is running: `LastWords` then holds the summary until the helpers stopped.
    static let running = Atomic<Bool>(false)

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
        // One command per process: a second run at once would write the first one's summary.
        precondition(!running.exchange(true, ordering: .acquiringAndReleasing), "CommandLifecycle.run is already running")
        defer { running.store(false, ordering: .releasing) }
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
            // The command itself stopped in order; the exit says why, and its report comes last.
            CommandLog.logger(name).error("\(error)")
            try? await LastWords.say()
            throw ExitCode(2)
        } catch {
            // A helper failed while the group stopped it, after the command had handed in its
            // report: the command's own status wins, as when it threw it itself.
            let held = LastWords.isHolding
            do { try await LastWords.say() } catch where held { throw error }
            throw error
        }
        // Every helper has stopped: nothing writes below the summary now.
        try await LastWords.say()
    }
}

/// What a long-running command says last (its summary, the last line on stderr, and its exit
/// status), held until its helper services have stopped. Written as the command's service
/// returned, a helper stopping after it wrote below the summary: the connection watch's
/// "connected to ... after 8.1 s", seen in CI. One command runs per process, so one holder.
enum LastWords {
    private static let pending = Mutex<[@Sendable () throws -> Void]>([])
    private static let preludes = Mutex<[@Sendable () async -> Void]>([])

    /// Holds `write` until `CommandLifecycle.run`'s services have all stopped; outside it (a
    /// command with no lifecycle), runs what comes before the summary and writes at once.
    static func atEnd(_ write: @escaping @Sendable () throws -> Void) async throws {
        guard CommandLifecycle.running.load(ordering: .acquiring) else {
            await runPreludes()
            return try write()
        }
        pending.withLock { $0.append(write) }
    }

    /// Runs `work` just before the summary is written: ending the span exporter, whose last
    /// lines ("OTLP: N span(s) exported") belong above the summary. Each runs once: by `say()`,
    /// by `atEnd` outside a lifecycle, or by `endingPreludes` on a way out that says nothing.
    /// Async: swift-otel's exporter ends on the cooperative pool, which a blocked thread of that
    /// pool starved (1 s more on one CPU, measured).
    static func beforeSummary(_ work: @escaping @Sendable () async -> Void) {
        preludes.withLock { $0.append(work) }
    }

    /// Runs (once) what `beforeSummary` registered and has not run yet.
    static func runPreludes() async {
        let work = preludes.withLock { held in
            defer { held = [] }
            return held
        }
        for item in work { await item() }
    }

    /// Runs `body`, then what `beforeSummary` registered and has not run yet, whether `body`
    /// returned or threw: a way out without a summary still sends the last spans.
    static func endingPreludes(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await runPreludes()
            throw error
        }
        await runPreludes()
    }

    /// Whether a summary is held.
    static var isHolding: Bool { pending.withLock { !$0.isEmpty } }

    /// Runs the preludes (unless `hurried`: a second signal exits at once, not after the span
    /// exporter's last wait), then writes what was held, in order; rethrows the first error (an
    /// `ExitCode`) after all ran. Each write runs once, whoever calls this first.
    static func say(hurried: Bool = false) async throws {
        if !hurried { await runPreludes() }
        let writes = pending.withLock { held in
            defer { held = [] }
            return held
        }
        var first: (any Error)?
        for write in writes {
            do { try write() } catch { first = first ?? error }
        }
        if let first { throw first }
    }
}
