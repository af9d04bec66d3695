import ArgumentParser
import NotificationBus

/// Where `request` and `reply` reach a broker: both sides at once.
struct BrokerEndpointOptions: ParsableArguments {
    @Option(
        name: .customLong("frontend"),
        help: ArgumentHelp(
            "The broker's frontend, where publishers connect (default \(DefaultEndpoints.frontend)). Repeatable, with --backend: several brokers, no single point of failure.",
            valueName: "endpoint"))
    var frontends: [String] = []

    @Option(
        name: .customLong("backend"),
        help: ArgumentHelp(
            "The broker's backend, where subscribers connect (default \(DefaultEndpoints.backend)). Repeatable, with --frontend.",
            valueName: "endpoint"))
    var backends: [String] = []

    /// The frontends given, or the default one, for messages.
    var frontend: String { (frontends.isEmpty ? [DefaultEndpoints.frontend] : frontends).joined(separator: ", ") }
    /// The backends given, or the default one, for messages.
    var backend: String { (backends.isEmpty ? [DefaultEndpoints.backend] : backends).joined(separator: ", ") }

    /// A CURVE client of the broker, like publish and subscribe with --connect.
    @OptionGroup var curve: CurveOptions

    func validate() throws {
        for endpoint in frontends { try validateEndpoint(endpoint, option: "--frontend", connecting: true) }
        for endpoint in backends { try validateEndpoint(endpoint, option: "--backend", connecting: true) }
        if frontends.count != backends.count && !frontends.isEmpty && !backends.isEmpty {
            throw ValidationError("--frontend and --backend name one broker each: give as many of one as of the other")
        }
        switch (curve.curveSecret, curve.curveServerKey) {
        case (nil, nil), (.some, .some): break
        case (nil, .some): throw ValidationError("--curve-server-key needs --curve-secret too")
        case (.some, nil): throw ValidationError("--curve-secret needs --curve-server-key (the broker's .pub file)")
        }
    }

    /// The bus of `command`, its own lines (connections, handshakes, rejections) at --log-level
    /// debug, with the CURVE keys loaded when given.
    func configuration(_ command: String) throws -> BusConfiguration {
        var configuration = BusConfiguration.brokered(
            frontends: frontends.isEmpty ? [DefaultEndpoints.frontend] : frontends,
            backends: backends.isEmpty ? [DefaultEndpoints.backend] : backends)
        configuration.logger = CommandLog.logger(command)
        try curve.apply(to: &configuration, allowList: nil, command: command)
        return configuration
    }
}
