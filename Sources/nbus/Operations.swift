import ArgumentParser
import BusOperations
import Logging
import NotificationBus
import Prometheus
import ServiceLifecycle
import Synchronization

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
