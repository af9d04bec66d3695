import ArgumentParser
import BusOperations
import Logging
import NotificationBus
import Prometheus
import ServiceLifecycle
import Synchronization

/// `--log-level` and `--log-format`, for every command: one format for nbus's lines and those of
/// the libraries it uses (swift-service-lifecycle's), on standard error. Notifications that
/// `nbus subscribe` prints stay plain data on standard output.
struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong("log-level"), help: ArgumentHelp(
        "Lowest level logged on stderr: trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel: Logger.Level = .info

    @Option(name: .customLong("log-format"), help: ArgumentHelp(
        "Log lines as text (timestamp level label: message key=value...) or json (one object per line).",
        valueName: "format"))
    var logFormat: LogFormat = .text

    /// Applies the settings to every logger made from now on.
    func bootstrap() {
        CommandLog.configure(level: logLevel, format: logFormat)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}
extension CommandSummary.Format: ExpressibleByArgument {}

/// The process's loggers: one per command, labelled as its lines start (`nbus broker`).
enum CommandLog {
    private static let settings = Mutex<(level: Logger.Level, format: LogFormat)>((.info, .text))

    /// Installs `BusLogHandler` for the whole process; call it once, before anything logs. Each
    /// logger takes the settings of `configure` in force when it is made.
    static func bootstrap() {
        LoggingSystem.bootstrap { label in
            let (level, format) = settings.withLock { $0 }
            return BusLogHandler(label: label, format: format, level: level)
        }
    }

    /// The level and format of loggers made from now on (a command's `--log-level`, `--log-format`).
    static func configure(level: Logger.Level, format: LogFormat) {
        settings.withLock { $0 = (level, format) }
    }

    /// The level in force.
    static var level: Logger.Level { settings.withLock { $0.level } }

    /// The log format in force.
    static var format: LogFormat { settings.withLock { $0.format } }

    /// The logger of `command` (`broker`, `publish`...): its lines read `nbus broker: ...`.
    static func logger(_ command: String) -> Logger {
        Logger(label: "nbus \(command)")
    }
}

/// `--http` and `--metrics-interval` of `nbus publish` and `nbus subscribe`.
struct BusHTTPOptions: ParsableArguments {
    @Option(name: .customLong("http"), help: ArgumentHelp(
        "Serve /metrics (Prometheus) and /healthz on HOST:PORT (a bare PORT is 127.0.0.1; 0 picks a free port, logged).",
        valueName: "host:port"))
    var http: String?

    @Option(name: .customLong("metrics-interval"), parsing: .unconditional, help: ArgumentHelp(
        "With --http: seconds between samples of the bus's counters (0.1 to 3600).", valueName: "seconds"))
    var metricsInterval: Double = 5

    func validate() throws {
        if let http {
            do { _ = try HTTPListenAddress(parsing: http) } catch { throw ValidationError("--http \(error)") }
        }
        try SecondsOption.check(metricsInterval, "--metrics-interval", in: 0.1...3_600)
    }

    /// The sampler and the HTTP server for `bus`, or nothing without `--http`; with `--http` and
    /// `measuresDelivery`, the delivery-latency histogram the command records into as its consumer
    /// takes each notification.
    func services(
        bus: Bus, subscriptions: [BusMetricsService.SubscriptionSource], command: String, measuresDelivery: Bool = false
    ) throws -> (services: [any Service], latency: DeliveryLatencyMetrics?) {
        // The tcp and ipc endpoints the bus connects to: a warning in the log when they stay
        // unreachable (libzmq retries in silence).
        let connected = (bus.configuration.publish + bus.configuration.subscribe).compactMap { attachment -> String? in
            guard case .connect(let endpoint) = attachment, !endpoint.hasPrefix("inproc://") else { return nil }
            return endpoint
        }
        // Each endpoint once: the bus counts an endpoint once however many of its sockets connect there.
        var seen = Set<String>()
        let distinct = connected.filter { seen.insert($0).inserted }
        let watch = ConnectionWatchService(bus: bus, endpoints: distinct, logger: CommandLog.logger(command))
        guard let http else { return ([watch], nil) }
        let address = try HTTPListenAddress(parsing: http)
        try address.checkListenable()
        let registry = PrometheusCollectorRegistry()
        let logger = CommandLog.logger(command)
        let sampler = BusMetricsService(
            bus: bus, subscriptions: subscriptions, interval: SecondsOption.duration(metricsInterval),
            factory: HelpTextMetricsFactory(registry: registry, help: BusMetricsService.helpTexts), logger: logger)
        let latency = measuresDelivery ? DeliveryLatencyMetrics(registry: registry) : nil
        let server = MonitoringHTTPService(
            address: address,
            routes: [
                ("/metrics", {
                    sampler.sample()
                    return MonitoringResponse(
                        contentType: "text/plain; version=0.0.4; charset=utf-8",
                        body: registry.emitToBuffer() + ProcessMetrics.exposition())
                }),
                ("/healthz", { .text("ok\n") }),
            ], logger: logger)
        return ([watch, sampler, server], latency)
    }
}

/// `--http` of `nbus broker`.
struct BrokerHTTPOptions: ParsableArguments {
    @Option(name: .customLong("http"), help: ArgumentHelp(
        "Serve /metrics, /healthz, /varz, /connz and /subsz on HOST:PORT (a bare PORT is 127.0.0.1; 0 picks a free port, logged). Off by default.",
        valueName: "host:port"))
    var http: String?

    func validate() throws {
        if let http {
            do { _ = try HTTPListenAddress(parsing: http) } catch { throw ValidationError("--http \(error)") }
        }
    }
}

/// Logs `text`, written as `nbus COMMAND: message`, through the command's logger (whose label
/// puts the `nbus COMMAND:` back in front of the message in text lines).
func logLine(_ level: Logger.Level, _ command: String, _ text: String) {
    let prefix = "nbus \(command): "
    let message = text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
    CommandLog.logger(command).log(level: level, "\(message)")
}

/// Writes how `command` ended (its log lines, the detail lines of a text summary, the summary,
/// in that order: the summary is the last line on stderr) and exits with its status.
func finish(_ command: String, _ outcome: CommandOutcome, format: CommandSummary.Format) throws {
    for line in outcome.lines { logLine(line.level, command, line.text) }
    if format == .text {
        for line in outcome.detailLines { LogSink.standardError.write(line + "\n") }
    }
    outcome.summary?.write(format)
    if outcome.exitCode != 0 { throw ExitCode(outcome.exitCode) }
}

/// Logs `summary` at `level`: text lines carry its prose alone (each number once), JSON lines the
/// prose as `message` and every field beside it, numbers as numbers.
func logSummary(_ summary: CommandSummary, level: Logger.Level, logger: Logger) {
    log(summary.text, level: level, fields: summary.fields, logger: logger)
}

/// Logs `text` at `level` with `fields` in JSON lines only: in text lines the prose already says
/// them, and a reader should not meet each value twice.
func log(_ text: String, level: Logger.Level, fields: [(String, CommandSummary.Value)], logger: Logger) {
    guard CommandLog.format == .json else {
        logger.log(level: level, "\(text)")
        return
    }
    logger.log(level: level, "\(text)", metadata: Logger.Metadata(uniqueKeysWithValues: fields.map { ($0.0, $0.1.metadataValue) }))
}

extension CommandSummary.Value {
    /// The value as a log field: numbers stay numbers in JSON lines (`BusLogHandler`).
    var metadataValue: Logger.Metadata.Value {
        switch self {
        case .integer(let value): .stringConvertible(value)
        case .unsigned(let value): .stringConvertible(value)
        case .number(let value): .stringConvertible(value)
        case .bool(let value): .stringConvertible(value)
        case .string(let text): .string(text)
        case .object(let fields): .dictionary(Logger.Metadata(uniqueKeysWithValues: fields.map { ($0.0, $0.1.metadataValue) }))
        case .array(let values): .array(values.map(\.metadataValue))
        }
    }
}
