import ArgumentParser

@main
struct NBus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nbus",
        abstract: "NotificationBus: a cross-process NotificationCenter carried by ZeroMQ.",
        discussion: """
            Notifications are named (`orders.created`) and travel as NBP/1 frames \
            (see protocol/NBP-1.md). Patterns: exact `orders.created`, one token \
            `orders.*.eu`, the rest `orders.>`.
            """,
        subcommands: [Demo.self, BrokerCommand.self, Publish.self, Subscribe.self, Keygen.self, Bench.self]
    )
}
