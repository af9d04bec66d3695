#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import BusOperations
import Logging
import NotificationBus
import ServiceLifecycle
import ZeroMQ

struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Forward notifications from many publishers to many subscribers (XSUB/XPUB proxy).",
        discussion: """
            Example: nbus broker   (then nbus subscribe, nbus publish: they connect here)
            Exit status, details: docs/command-line.md (share/doc/nbus/ when installed).
            """)

    @Option(help: ArgumentHelp("Endpoint publishers connect to.", valueName: "endpoint"))
    var frontend = DefaultEndpoints.frontend

    @Option(help: ArgumentHelp("Endpoint subscribers connect to.", valueName: "endpoint"))
    var backend = DefaultEndpoints.backend

    @Option(help: ArgumentHelp(
        "Also forward what another broker's backend carries (a chain: this broker's frontend connects there). Repeatable; no cycles.",
        valueName: "endpoint"))
    var upstream: [String] = []

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "High-water mark: messages queued per publisher (a full one waits); per subscriber too with --subscriber-budget 0.",
        valueName: "messages"))
    var hwm: Int32 = 10_000

    @Option(name: .customLong("subscriber-budget"), parsing: .unconditional, help: ArgumentHelp(
        "MiB a subscriber may fall behind before it costs anyone else anything (default 64, NATS's max_pending; 0: queue --hwm messages per subscriber instead).",
        valueName: "MiB"))
    var subscriberBudget: Int = BrokerConfiguration.defaultSubscriberBudget >> 20

    @Option(name: .customLong("slow-after"), parsing: .unconditional, help: ArgumentHelp(
        "Seconds of patience with a subscriber: one that takes nothing this long while more than its budget goes by is disconnected (nobody waits for it); when a slow one fills its queue (budget / 384 B messages), the broker waits this long for room (publishers wait too), then disconnects it if it took nothing, or waits for it while it moves, up to 10 s, before sending past it (0: never wait). Keep it far below the publishers' --stall-limit (60 s by default): a publisher held back that long drops the broker.",
        valueName: "seconds"))
    var slowAfter: Double = 0.5

    @Option(name: .customLong("max-memory"), parsing: .unconditional, help: ArgumentHelp(
        "Resident memory (MiB) past which the broker drops every connection, so no peer can grow it without bound (64 or more; 0: no limit).",
        valueName: "MiB"))
    var maxMemory: Int = 4_096

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "TCP keepalive on every tcp connection: seconds idle before a probe and between probes, 0.001 to 2184 (rounded up to whole seconds; default 5); a peer whose host answers none of 3 is dropped (0: off). A frozen process on a live host is not detected.",
        valueName: "seconds"))
    var heartbeat: Double?

    @Option(name: .customLong("stuck-exit"), parsing: .unconditional, help: ArgumentHelp(
        "Seconds the forwarding loop may go without a round (it runs one at least every second) before the broker logs it and exits with status 70, for a supervisor to restart it (1 to 3600; 0: never, /healthz still says so after 5 s). Time the process was paused (SIGSTOP) does not count.",
        valueName: "seconds"))
    var stuckExit: Double = 10

    @Option(name: .customLong("idle-spin"), parsing: .unconditional, help: ArgumentHelp(
        "The low-latency setting: after forwarding, look for the next message this long before sleeping (e.g. 0.0002: a core stays busy while traffic flows; 0: off).",
        valueName: "seconds"))
    var idleSpin: Double = 0

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "On SIGTERM or SIGINT, seconds to keep handing what the broker already took to its subscribers before it closes (0 to 3600; 0: close at once, dropping what is queued). Nothing more is read from publishers meanwhile.",
        valueName: "seconds"))
    var drain: Double = 5

    /// `--heartbeat` in milliseconds (5 s when not given).
    var heartbeatMilliseconds: Int32 {
        SecondsOption.milliseconds(heartbeat ?? 5)
    }

    @Option(name: .customLong("retain-names"), parsing: .unconditional, help: ArgumentHelp(
        "Keep the retained value (NBP-1 §18) of at most this many names, for subscribers that start later (0, the default: keep none). Above 0 the broker subscribes to every name at its publishers: they send it all they post.",
        valueName: "n"))
    var retainNames: Int = 0

    @Option(name: .customLong("retain-bytes"), parsing: .unconditional, help: ArgumentHelp(
        "With --retain-names: the most MiB of retained notifications kept (default 64); past it, or past --retain-names, the value updated longest ago is evicted, counted and logged.",
        valueName: "MiB"))
    var retainBytes: Int?

    @Option(name: .customLong("state"), help: ArgumentHelp(
        "With --retain-names: keep the retained values in this directory (created if missing) across restarts and crashes, a kill -9 included (a power loss may lose the last seconds); one broker per directory. Without it they live in memory only.",
        valueName: "dir"))
    var state: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Print counters every N seconds, 0.1 to 86400 (0: only at exit).", valueName: "seconds"))
    var stats: Double = 0

    @Option(help: ArgumentHelp("The broker's secret key file (mode 0600); turns CURVE on.", valueName: "file"))
    var curveSecret: String?

    @Option(help: ArgumentHelp("With CURVE: the folder of publisher public keys (*.pub) to admit.", valueName: "folder"))
    var allowPublishers: String?

    @Option(help: ArgumentHelp("With CURVE: the folder of subscriber public keys (*.pub) to admit.", valueName: "folder"))
    var allowSubscribers: String?

    @OptionGroup var monitoring: BrokerHTTPOptions

    @Option(help: ArgumentHelp(
        "The summary on stderr when it stops: text (one line) or json (one object; the default with --log-format json).",
        valueName: "format"))
    var format: CommandSummary.Format?

    @OptionGroup var logging: LoggingOptions

    /// The --stats intervals accepted besides 0.
    static let statsRange: ClosedRange<Double> = 0.1...86_400

    /// Checks what only the command knows (endpoint syntax, `--stats`, `--stuck-exit`, the three
    /// CURVE flags, numbers that convert to the configuration's units), then maps the flags into
    /// `BrokerConfiguration` and lets it validate itself: its rules are written once, there, and a
    /// value it refuses is reported under the flag that set it (as nats-server maps flags into its
    /// `Options`). `run()` checks again once CURVE's keys are loaded, with the same rules.
    func validate() throws {
        try validateEndpoint(frontend, option: "--frontend")
        try validateEndpoint(backend, option: "--backend")
        for endpoint in upstream { try validateEndpoint(endpoint, option: "--upstream", connecting: true) }
        // Numbers the configuration could not even hold: NaN, infinities, spans past a year, a
        // negative size. Ranges are the configuration's to judge.
        for (value, flag) in [(heartbeat ?? 5, "--heartbeat"), (slowAfter, "--slow-after"), (idleSpin, "--idle-spin"), (drain, "--drain")] {
            guard value.isFinite, abs(value) <= SecondsOption.maximumTimeout else {
                throw ValidationError("\(flag) must be a number of seconds, got \(value)")
            }
        }
        guard maxMemory >= 0 else { throw ValidationError("--max-memory must be 0 (no limit) or a size in MiB, got \(maxMemory)") }
        // 0 means only at exit. Below 0.1 s the reports flood standard output (--stats 1e-9 wrote
        // 13,000 lines a second) and tell nothing a slower interval would not.
        if stats != 0 {
            do {
                try SecondsOption.check(stats, "--stats", in: Self.statsRange)
            } catch {
                throw ValidationError("\(error) (or 0: only at exit)")
            }
        }
        // Below 1 s a healthy loop, which starts a round at least every second, would trip it.
        if stuckExit != 0 {
            do { try SecondsOption.check(stuckExit, "--stuck-exit", in: 1...3_600) } catch {
                throw ValidationError("\(error) (or 0: never)")
            }
        }
        // A bound on what is kept, with nothing kept: said, as --state without --retain-names is.
        if retainBytes != nil && retainNames == 0 {
            throw ValidationError("--retain-bytes bounds the values --retain-names keeps: give --retain-names too (it is 0: keep none)")
        }
        let curveFlags = [curveSecret, allowPublishers, allowSubscribers].compactMap { $0 }.count
        guard curveFlags == 0 || curveFlags == 3 else {
            throw ValidationError("CURVE needs all three of --curve-secret, --allow-publishers and --allow-subscribers")
        }
        // CURVE's keys are read when the broker starts; whether it combines with --upstream is the
        // configuration's rule, judged here on its own terms with no key yet.
        if curveFlags > 0 && !upstream.isEmpty { try Self.checked(configuration(security: nil, logger: nil), curve: true) }
        try Self.checked(configuration(security: nil, logger: nil))
    }

    /// The flag that sets each of `BrokerConfiguration`'s settings, to name it in errors.
    static let flags: [BrokerConfiguration.Setting: String] = [
        .frontend: "--frontend", .backend: "--backend", .upstream: "--upstream", .highWaterMark: "--hwm",
        .subscriberBudget: "--subscriber-budget", .slowSubscriberPatience: "--slow-after", .heartbeat: "--heartbeat",
        .memoryLimit: "--max-memory", .idleSpin: "--idle-spin", .security: "--curve-secret", .drainTimeout: "--drain",
        .retainedNames: "--retain-names", .retainedBytes: "--retain-bytes", .stateDirectory: "--state",
    ]

    /// Throws a usage error (exit 64) naming the flag behind the configuration's first invalid
    /// setting, with the configuration's reason (`--max-memory must be 64 MiB to 1 PiB or no limit
    /// ..., not 1 MiB`). `curve`: judge it as if CURVE were on (its keys
    /// are not loaded yet).
    static func checked(_ configuration: BrokerConfiguration, curve: Bool = false) throws {
        let invalid: (setting: BrokerConfiguration.Setting, reason: String)?
        if curve && !configuration.upstream.isEmpty {
            invalid = (.upstream, BrokerConfiguration.curveWithUpstreamReason)
        } else {
            invalid = configuration.invalidSetting()
        }
        guard let (setting, reason) = invalid else { return }
        // A reason may name another setting ("needs retainedNames above 0"): by its flag here.
        let said = flags.reduce(reason) { text, entry in text.replacingOccurrences(of: entry.key.name, with: entry.value) }
        throw ValidationError("\(flags[setting] ?? setting.name) \(said)")
    }

    /// The CURVE settings from the key file and allow-list folders, or nil without CURVE. Throws
    /// `CurveKeyError`, or `PublicKeyGivenAsSecret` when --curve-secret names a public key file
    /// (checked first: its permission bits are not the problem, so `chmod 600` is no advice).
    private func loadSecurity() throws -> BrokerSecurity? {
        guard let curveSecret, let allowPublishers, let allowSubscribers else { return nil }
        if CurveOptions.isPublicKeyFile(curveSecret) { throw PublicKeyGivenAsSecret(path: curveSecret) }
        return BrokerSecurity(
            keyPair: try CurveKeyFile.readKeyPair(at: curveSecret),
            allowedPublishers: try CurveAllowList(directory: allowPublishers),
            allowedSubscribers: try CurveAllowList(directory: allowSubscribers))
    }

    /// The broker's configuration from the flags, in its units (MiB to bytes, seconds to
    /// `Duration`s), saturating rather than trapping on a number too large for them: the
    /// configuration then refuses it as out of range (`validate()` runs it past its rules).
    func configuration(security: BrokerSecurity?, logger: Logger?) -> BrokerConfiguration {
        func span(_ seconds: Double) -> Duration {
            // Finite and within a year (validate()): the conversion cannot trap.
            .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
        func mebibytes(_ count: Int) -> Int {
            let (bytes, overflow) = count.multipliedReportingOverflow(by: 1 << 20)
            return overflow ? (count < 0 ? .min : .max) : bytes
        }
        var configuration = BrokerConfiguration(frontend: frontend, backend: backend)
        configuration.upstream = upstream
        configuration.highWaterMark = hwm
        configuration.subscriberBudget = mebibytes(subscriberBudget)
        configuration.heartbeat = span(heartbeat ?? 5)
        configuration.slowSubscriberPatience = span(slowAfter)
        configuration.security = security
        configuration.memoryLimit = maxMemory <= 0 ? nil : UInt64(mebibytes(maxMemory))
        configuration.idleSpin = span(idleSpin)
        configuration.drainTimeout = span(drain)
        configuration.retainedNames = retainNames
        configuration.retainedBytes = mebibytes(retainBytes ?? BrokerConfiguration.defaultRetainedBytes >> 20)
        configuration.stateDirectory = state
        configuration.logger = logger
        return configuration
    }

    func run() async throws {
        // Before anything binds: a connection refused for want of a file descriptor makes libzmq
        // spin on accept (see Broker.raiseOpenFileLimit).
        logging.bootstrap()
        let logger = CommandLog.logger("broker")
        let openFiles = Broker.raiseOpenFileLimit()
        try await CommandLifecycle.run(name: "broker") { () async throws -> (BrokerCommandService, [any Service]) in
            // Before the broker binds and says it is ready: scripts wait for that line.
            if let http = monitoring.http { try HTTPListenAddress(parsing: http).checkListenable() }
            let broker: Broker
            let security: BrokerSecurity?
            do {
                security = try loadSecurity()
            } catch {
                throw fail("broker", error, code: 2)
            }
            let brokerConfiguration = configuration(security: security, logger: logger)
            try Self.checked(brokerConfiguration)
            do {
                broker = try Broker(brokerConfiguration)
            } catch {
                // The state directory's errors name the flag that gave it, as usage errors do.
                let text = naming(error, options: [("--frontend", [frontend]), ("--backend", [backend])])
                throw fail("broker", text.replacing("stateDirectory ", with: "--state "), code: 2)
            }
            let upstreams = upstream.map { " upstream \($0)" }.joined()
            // The one line on stdout: the endpoints as bound (a `:*` port resolved), for scripts
            // to wait for. Everything else is logged (stderr, --log-format), this line too.
            let banner = "broker: frontend \(broker.frontendEndpoint) backend \(broker.backendEndpoint)\(upstreams)"
            FileWriter.standardOutput.write(banner + "\n")
            log(
                banner, level: .info,
                fields: [("frontend", .string(broker.frontendEndpoint)), ("backend", .string(broker.backendEndpoint))], logger: logger)
            if let openFiles {
                log(
                    "broker: open files limit \(openFiles) (each connection takes one)", level: .info,
                    fields: [("openFiles", .unsigned(openFiles))], logger: logger)
            }
            if let security {
                let curve =
                    "broker: CURVE on, public key \(security.keyPair.publicKey); admitting "
                    + "\(security.allowedPublishers.count) publisher key(s) from \(security.allowedPublishers.source) and "
                    + "\(security.allowedSubscribers.count) subscriber key(s) from \(security.allowedSubscribers.source)"
                logger.info("\(curve)")
                for (list, role) in [(security.allowedPublishers, "publisher"), (security.allowedSubscribers, "subscriber")]
                where list.isEmpty {
                    logger.warning("no *.pub file in \(list.source): every \(role) will be refused")
                }
            }
            var helpers: [any Service] = []
            if stuckExit > 0 {
                helpers.append(
                    StuckForwardingWatchdog(broker: broker, limit: SecondsOption.duration(stuckExit), secured: security != nil, logger: logger))
            }
            if let http = monitoring.http {
                let monitor = BrokerMonitor(
                    broker: broker,
                    description: BrokerDescription(
                        frontend: broker.frontendEndpoint, backend: broker.backendEndpoint, upstream: upstream,
                        curve: security != nil,
                        settings: settings(openFiles: openFiles),
                        memoryLimit: maxMemory == 0 ? nil : UInt64(maxMemory) << 20))
                helpers.append(
                    MonitoringHTTPService(address: try HTTPListenAddress(parsing: http), routes: monitor.routes, logger: logger))
            }
            return (
                BrokerCommandService(
                    broker: broker, statsInterval: stats, drain: SecondsOption.duration(drain),
                    summaryFormat: CommandSummary.format(output: format, log: logging.logFormat), secured: security != nil,
                    logger: logger), helpers
            )
        }
    }

    /// The settings `/varz` shows, as numbers (the open-files limit left out when unknown).
    func settings(openFiles: UInt64?) -> [String: Double] {
        var settings: [String: Double] = [
            "hwm": Double(hwm), "subscriberBudgetMiB": Double(subscriberBudget), "slowAfterSeconds": slowAfter,
            "maxMemoryMiB": Double(maxMemory),
            "keepaliveSeconds": Double(ConnectionKeepalive.options(interval: .milliseconds(heartbeatMilliseconds), timeout: .zero)?.idle ?? 0),
            "idleSpinSeconds": idleSpin, "statsSeconds": stats, "stuckExitSeconds": stuckExit, "drainSeconds": drain,
        ]
        if let openFiles { settings["openFilesLimit"] = Double(openFiles) }
        return settings
    }

    /// The counters as a summary: `text` for people (`from publishers N msgs ...`, with the CURVE
    /// counts when `secured`), `fields` every counter as a number (docs/command-line.md).
    static func summary(_ label: String, _ stats: BrokerStatistics, secured: Bool) -> CommandSummary {
        var text =
            "\(label): from publishers \(stats.fromPublishers) msgs (\(stats.bytesFromPublishers) B, "
            + "\(stats.notificationsFromPublishers) notifications), "
            + "to subscribers \(stats.toSubscribers) msgs (\(stats.bytesToSubscribers) B, "
            + "\(stats.notificationsToSubscribers) notifications), "
            + "subscription messages \(stats.subscriptionMessages), waits for room \(stats.backpressureWaits), "
            + "slow subscribers \(stats.slowSubscriberEpisodes) (sent past them \(stats.sentPastSlowSubscribers)), "
            + "stalled subscribers disconnected \(stats.stalledSubscribersDisconnected), "
            + "slow subscribers disconnected \(stats.slowSubscribersDisconnected), "
            + "memory resets \(stats.memoryLimitResets), end-of-stream replays \(stats.endOfStreamReplays), "
            + "connections \(stats.connections) (peak \(stats.peakConnections)), accept failures \(stats.acceptFailures), "
            + "refused frames with another connection's publisher id \(stats.foreignPublisherIDFrames)"
        if stats.subscriberHandshakesHeld > 0 {
            text += ", subscriber handshakes held back \(stats.subscriberHandshakesHeld) (never answered "
                + "\(stats.subscriberHandshakesAbandoned))"
        }
        if stats.endOfStreamRecordsTooLarge > 0 || stats.endOfStreamRecordsEvicted > 0 {
            text += ", end-of-stream records not kept for a replay: \(stats.endOfStreamRecordsTooLarge) over 64 KiB, "
                + "\(stats.endOfStreamRecordsEvicted) evicted (more than 4,096 or 16 MiB kept)"
        }
        if stats.retainedNames > 0 || stats.retainedEvictions > 0 || stats.retainedSnapshots > 0 {
            text +=
                ", retained \(stats.retainedNames) names (\(stats.retainedBytes) B), evicted \(stats.retainedEvictions), "
                + "cleared \(stats.retainedClears), expired \(stats.retainedExpirations), snapshots \(stats.retainedSnapshots) (\(stats.retainedNotificationsSent) notifications)"
        }
        if stats.retainedStateDamaged > 0 || stats.retainedStateWriteFailures > 0 {
            text += ", --state: damaged log at start \(stats.retainedStateDamaged) (\(stats.retainedStateBytesCut) B cut), "
                + "write failures \(stats.retainedStateWriteFailures)"
        }
        if stats.stopDrain > .zero {
            let seconds = (Timestamps.seconds(stats.stopDrain) * 1_000).rounded() / 1_000
            text +=
                stats.stopDrainTimedOut
                ? ", stop drain \(seconds) s: ran out with notifications queued (\(stats.undeliveredAtStop) held); subscribers behind count them as a gap"
                : ", stop drain \(seconds) s: everything held was handed on"
        }
        func counts(_ role: String, _ counts: AuthenticationCounts) -> String {
            "\(role) admitted \(counts.admitted), refused keys \(counts.refusedKeys), "
                + "failed handshakes \(counts.failedHandshakes)"
        }
        if secured {
            text += "; CURVE: \(counts("publishers", stats.publisherAuthentication)); "
                + counts("subscribers", stats.subscriberAuthentication)
        }
        func authentication(_ counts: AuthenticationCounts) -> CommandSummary.Value {
            .object([
                ("admitted", .unsigned(counts.admitted)), ("refusedKeys", .unsigned(counts.refusedKeys)),
                ("failedHandshakes", .unsigned(counts.failedHandshakes)),
            ])
        }
        return CommandSummary(
            command: "broker", text: text,
            fields: [
                ("fromPublishers", .unsigned(stats.fromPublishers)), ("bytesFromPublishers", .unsigned(stats.bytesFromPublishers)),
                ("notificationsFromPublishers", .unsigned(stats.notificationsFromPublishers)),
                ("toSubscribers", .unsigned(stats.toSubscribers)), ("bytesToSubscribers", .unsigned(stats.bytesToSubscribers)),
                ("notificationsToSubscribers", .unsigned(stats.notificationsToSubscribers)),
                ("subscriptionMessages", .unsigned(stats.subscriptionMessages)),
                ("backpressureWaits", .unsigned(stats.backpressureWaits)),
                ("slowSubscriberEpisodes", .unsigned(stats.slowSubscriberEpisodes)),
                ("sentPastSlowSubscribers", .unsigned(stats.sentPastSlowSubscribers)),
                ("stalledSubscribersDisconnected", .unsigned(stats.stalledSubscribersDisconnected)),
                ("slowSubscribersDisconnected", .unsigned(stats.slowSubscribersDisconnected)),
                ("memoryLimitResets", .unsigned(stats.memoryLimitResets)), ("endOfStreamReplays", .unsigned(stats.endOfStreamReplays)),
                ("endOfStreamRecordsTooLarge", .unsigned(stats.endOfStreamRecordsTooLarge)),
                ("endOfStreamRecordsEvicted", .unsigned(stats.endOfStreamRecordsEvicted)),
                ("connections", .integer(Int64(stats.connections))), ("peakConnections", .integer(Int64(stats.peakConnections))),
                ("acceptFailures", .unsigned(stats.acceptFailures)), ("forwardingErrors", .unsigned(stats.forwardingErrors)),
                ("subscriberHandshakesHeld", .unsigned(stats.subscriberHandshakesHeld)),
                ("subscriberHandshakesAbandoned", .unsigned(stats.subscriberHandshakesAbandoned)),
                ("foreignPublisherIDFrames", .unsigned(stats.foreignPublisherIDFrames)),
                ("stopDrainSeconds", .number(Timestamps.seconds(stats.stopDrain))),
                ("stopDrainTimedOut", .bool(stats.stopDrainTimedOut)),
                ("undeliveredAtStop", .unsigned(stats.undeliveredAtStop)),
                ("retainedNames", .integer(Int64(stats.retainedNames))), ("retainedBytes", .integer(Int64(stats.retainedBytes))),
                ("retainedEvictions", .unsigned(stats.retainedEvictions)), ("retainedClears", .unsigned(stats.retainedClears)),
                ("retainedExpirations", .unsigned(stats.retainedExpirations)),
                ("retainedSnapshots", .unsigned(stats.retainedSnapshots)),
                ("retainedNotificationsSent", .unsigned(stats.retainedNotificationsSent)),
                ("retainedSnapshotsDropped", .unsigned(stats.retainedSnapshotsDropped)),
                ("retainedStateDamaged", .unsigned(stats.retainedStateDamaged)),
                ("retainedStateBytesCut", .unsigned(stats.retainedStateBytesCut)),
                ("retainedStateWriteFailures", .unsigned(stats.retainedStateWriteFailures)),
                ("curve", .bool(secured)),
                ("publisherAuthentication", authentication(stats.publisherAuthentication)),
                ("subscriberAuthentication", authentication(stats.subscriberAuthentication)),
            ])
    }

    /// Logs the counters (info) while the broker runs: every `--stats` seconds, and when it is
    /// stuck. Text lines carry the prose alone, JSON lines the counters as numeric fields too.
    static func report(_ label: String, _ stats: BrokerStatistics, secured: Bool, logger: Logger) {
        logSummary(summary(label, stats, secured: secured), level: .info, logger: logger)
    }
}
