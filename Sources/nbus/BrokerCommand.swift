import ArgumentParser
import NotificationBus

struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Forward notifications from many publishers to many subscribers (XSUB/XPUB proxy).",
        discussion: """
            Publishers connect to the frontend (`nbus publish --connect FRONTEND`), subscribers to \
            the backend (`nbus subscribe --connect BACKEND`). Subscriptions flow upstream, so \
            filtering still happens at each publisher. Stops cleanly on SIGINT or SIGTERM and \
            prints its counters; a second signal exits at once.
            """)

    @Option(help: ArgumentHelp("Endpoint publishers connect to.", valueName: "endpoint"))
    var frontend = DefaultEndpoints.frontend

    @Option(help: ArgumentHelp("Endpoint subscribers connect to.", valueName: "endpoint"))
    var backend = DefaultEndpoints.backend

    @Option(help: ArgumentHelp(
        "Also forward what another broker's backend carries (a chain: this broker's frontend connects there). Repeatable; no cycles.",
        valueName: "endpoint"))
    var upstream: [String] = []

    @Option(help: ArgumentHelp(
        "High-water mark: messages queued per publisher and per subscriber before the broker drops.",
        valueName: "messages"))
    var hwm: Int32 = 10_000

    @Option(help: ArgumentHelp("Print counters every N seconds (0: only at exit).", valueName: "seconds"))
    var stats: Double = 0

    func validate() throws {
        guard frontend != backend else { throw ValidationError("--frontend and --backend must differ (both are \(frontend))") }
        guard hwm >= 0 else { throw ValidationError("--hwm must be 0 (no limit) or more") }
        guard stats >= 0 else { throw ValidationError("--stats must be 0 or more seconds") }
        for endpoint in upstream where endpoint == frontend || endpoint == backend {
            throw ValidationError("--upstream \(endpoint) is this broker's own endpoint (a cycle)")
        }
    }

    func run() async throws {
        TerminationSignals.install()
        let broker: Broker
        do {
            broker = try Broker(frontend: frontend, backend: backend, upstream: upstream, highWaterMark: hwm)
        } catch {
            throw fail("broker", error, code: 2)
        }
        let upstreams = upstream.map { " upstream \($0)" }.joined()
        FileWriter.standardOutput.write(
            "broker: frontend \(broker.frontendEndpoint) backend \(broker.backendEndpoint)\(upstreams)\n")
        let interval = stats
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await TerminationSignals.wait() }
            if interval > 0 {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(Int(interval * 1_000)))
                        if Task.isCancelled { break }
                        Self.report("stats", await broker.statistics())
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        Self.report("stopped", await broker.stop())
    }

    static func report(_ label: String, _ stats: BrokerStatistics) {
        FileWriter.standardOutput.write(
            "broker \(label): from publishers \(stats.fromPublishers) msgs (\(stats.bytesFromPublishers) B), "
                + "to subscribers \(stats.toSubscribers) msgs (\(stats.bytesToSubscribers) B), "
                + "subscription messages \(stats.subscriptionMessages)\n")
    }
}
