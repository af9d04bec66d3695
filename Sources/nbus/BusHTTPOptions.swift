import ArgumentParser
import BusOperations
import NotificationBus
import Prometheus
import ServiceLifecycle

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
