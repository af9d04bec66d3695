import ArgumentParser
import NotificationBus

/// `--bind`/`--connect`, shared by publish and subscribe.
struct EndpointOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Bind this endpoint (direct topology: others connect here). Repeatable.", valueName: "endpoint"))
    var bind: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Connect to this endpoint (a broker, or a binding peer). Repeatable: several brokers are one bus with no single point of failure (every notification goes through each; a subscriber keeps the first copy). Without --connect or --bind: nbus broker's default endpoints, \(DefaultEndpoints.frontend) for publish, \(DefaultEndpoints.backend) for subscribe.",
            valueName: "endpoint"))
    var connect: [String] = []

    /// Refuses endpoints that cannot work (`UnusableEndpoint`: exit 2).
    func validate() throws {
        for endpoint in bind { try validateEndpoint(endpoint, option: "--bind") }
        for endpoint in connect { try validateEndpoint(endpoint, option: "--connect", connecting: true) }
    }

    func attachments(defaultConnect: String) -> [Attachment] {
        let attachments = bind.map(Attachment.bind) + connect.map(Attachment.connect)
        return attachments.isEmpty ? [.connect(defaultConnect)] : attachments
    }
}
