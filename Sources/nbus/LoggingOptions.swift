import ArgumentParser
import BusOperations
import Logging

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
