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

    @Option(
        name: .customLong("connect"),
        help: ArgumentHelp(
            "A broker as FRONTEND,BACKEND: where publish --connect and subscribe --connect go (e.g. tcp://10.0.0.5:5550,tcp://10.0.0.5:5551); the same as --frontend FRONTEND --backend BACKEND. Repeatable: several brokers.",
            valueName: "frontend,backend"))
    var connects: [String] = []

    /// The --connect pairs, split: nil for one that is not two endpoints (`validate()` says so).
    private var connectPairs: [(frontend: String, backend: String)?] {
        connects.map { pair in
            let parts = pair.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty ? (parts[0], parts[1]) : nil
        }
    }

    /// Every broker's frontend: --frontend's, then --connect's; the default one when none is given.
    var allFrontends: [String] {
        let given = frontends + connectPairs.compactMap { $0?.frontend }
        return given.isEmpty ? [DefaultEndpoints.frontend] : given
    }
    /// Every broker's backend, in the same order.
    var allBackends: [String] {
        let given = backends + connectPairs.compactMap { $0?.backend }
        return given.isEmpty ? [DefaultEndpoints.backend] : given
    }

    /// The frontends given, or the default one, for messages.
    var frontend: String { allFrontends.joined(separator: ", ") }
    /// The backends given, or the default one, for messages.
    var backend: String { allBackends.joined(separator: ", ") }

    /// A CURVE client of the broker, like publish and subscribe with --connect.
    @OptionGroup var curve: CurveOptions

    func validate() throws {
        for endpoint in frontends { try validateEndpoint(endpoint, option: "--frontend", connecting: true) }
        for endpoint in backends { try validateEndpoint(endpoint, option: "--backend", connecting: true) }
        // One without the other would be paired with the default of the other, silently.
        if frontends.count != backends.count {
            throw ValidationError(
                "--frontend and --backend name one broker each: give as many of one as of the other (got \(frontends.count) and \(backends.count)), or --connect FRONTEND,BACKEND")
        }
        for (pair, split) in zip(connects, connectPairs) {
            guard let split else {
                throw ValidationError(
                    "--connect \(displayed(pair)): give a broker's two endpoints, FRONTEND,BACKEND (e.g. \(DefaultEndpoints.frontend),\(DefaultEndpoints.backend))")
            }
            try validateEndpoint(split.frontend, option: "--connect", connecting: true)
            try validateEndpoint(split.backend, option: "--connect", connecting: true)
        }
        if !connects.isEmpty && frontends.count != backends.count {
            throw ValidationError("with --connect, give --frontend and --backend in pairs too (or only --connect)")
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
        var configuration = BusConfiguration.brokered(frontends: allFrontends, backends: allBackends)
        configuration.logger = CommandLog.logger(command)
        try curve.apply(to: &configuration, allowList: nil, command: command)
        return configuration
    }
}
