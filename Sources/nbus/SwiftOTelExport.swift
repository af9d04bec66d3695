#if SwiftOTel
import Foundation
import Logging
import OTLPTracing
import OTel
import ServiceLifecycle
import Synchronization
import Tracing

/// `--otlp-endpoint` through swift-otel, in an `nbus` built with `--traits SwiftOTel`: swift-otel's
/// tracing backend (its tracer, batch span processor and OTLP/HTTP protobuf exporter) bootstrapped
/// as the process's tracer, its services run in a service group of their own. Not in the command's
/// group: the command's spans end while its service shuts down, so the backend must outlive it and
/// be ended after, before the summary (`LastWords.beforeSummary`), as the built-in exporter is.
final class SwiftOTelExport: Sendable {
    let endpoint: OTLPEndpoint
    private let group: ServiceGroup
    private let running: Task<Void, Never>
    /// What it said of its exports; muted when `finish` gave up waiting (swift-otel's tasks may
    /// still log, and nothing may follow the command's summary).
    let diagnostics = SwiftOTelDiagnostics()

    /// How long one export may take: an export under way when the command ends, then the flush of
    /// what is left, must both fit in the 3 s the end waits (`TracingOptions.shutdownTimeout`).
    /// async-http-client retries a refused connection until this deadline, so it is also how long
    /// a receiver that is not there costs each batch.
    static let exportTimeout = Duration.seconds(1)

    /// OpenTelemetry's environment variables swift-otel may read here: what tunes the export.
    /// The rest are not passed on: those naming where, how and under which service name spans go
    /// are the flags' (`OTEL_EXPORTER_OTLP_ENDPOINT` silently replaced `--otlp-endpoint`, and
    /// `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` stopped the process: this build has no gRPC exporter),
    /// and those of logs and metrics would bootstrap systems nbus has bootstrapped already.
    static let passedEnvironment: Set<String> = [
        "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
        "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    ]

    /// Bootstraps swift-otel's tracer and starts its services.
    init(endpoint: OTLPEndpoint, serviceName: String, command: String) throws {
        self.endpoint = endpoint
        let diagnostics = diagnostics
        let environment = ProcessInfo.processInfo.environment
        for name in environment.keys.sorted() where name.hasPrefix("OTEL_") && !Self.passedEnvironment.contains(name) {
            logLine(.info, command, "OTLP: \(name) is ignored: --otlp-endpoint and --otlp-service-name say where spans go and as which service")
        }
        // Its warnings (a failed export, a full queue) go to the command's log, as the built-in
        // exporter's do, naming the endpoint; the rest is counted (`SwiftOTelDiagnostics`).
        var logger = Logger(label: "nbus.otlp") { _ in
            MutableLogHandler(base: CommandLog.logger(command).handler, diagnostics: diagnostics)
        }
        logger[metadataKey: "endpoint"] = "\(endpoint)"
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .debug
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        // Used as it is: OTLPEndpoint already appended /v1/traces to a base URL.
        configuration.traces.otlpExporter.endpoint = endpoint.description
        // As the built-in exporter: a batch every second.
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        configuration.traces.batchSpanProcessor.exportTimeout = Self.exportTimeout
        configuration.traces.otlpExporter.timeout = Self.exportTimeout
        let service = try OTel.bootstrap(
            configuration: configuration, environment: environment.filter { Self.passedEnvironment.contains($0.key) })
        let group = ServiceGroup(configuration: .init(services: [service], gracefulShutdownSignals: [], logger: logger))
        self.group = group
        running = Task {
            do { try await group.run() } catch { logger.warning("swift-otel stopped: \(error)") }
        }
    }

    /// Ends the backend: swift-otel's processor exports what it holds on graceful shutdown. Waits
    /// at most `timeout`, without blocking a thread; false if the backend had not ended by then
    /// (what it still held is lost, and swift-otel says nothing more).
    func finish(timeout: Duration) async -> Bool {
        await group.triggerGracefulShutdown()
        let (outcomes, continuation) = AsyncStream<Bool>.makeStream()
        // Whichever comes first: the backend's end, or the timeout.
        Task { [running] in
            await running.value
            continuation.yield(true)
        }
        let late = Task {
            try? await Task.sleep(for: timeout)
            continuation.yield(false)
        }
        var iterator = outcomes.makeAsyncIterator()
        let finished = await iterator.next() ?? false
        late.cancel()
        if !finished { diagnostics.mute() }
        return finished
    }
}

/// What swift-otel said of its exports, counted: its logger is the one place it says it (no
/// count is public). A batch exported or lost is a debug or warning line with `batch_size`; a full
/// queue a warning with `dropped_count`. The first failure of each kind reaches the command's log,
/// the rest are counted and said once at the end, as the built-in exporter does.
final class SwiftOTelDiagnostics: Sendable {
    struct Counts: Sendable {
        var exported = 0
        var failed = 0
        var failedExports = 0
        var dropped = 0
        var muted = false
    }
    private let state = Mutex(Counts())

    var counts: Counts { state.withLock { $0 } }
    var isMuted: Bool { state.withLock { $0.muted } }
    /// Nothing more reaches the command's log: nothing may follow the summary.
    func mute() { state.withLock { $0.muted = true } }

    /// Counts `message`; returns whether it should reach the command's log.
    func count(_ message: String, batchSize: Int?, dropped: Int?) -> Bool {
        state.withLock { counts in
            guard !counts.muted else { return false }
            switch message {
            case "Exported batch.":
                counts.exported += batchSize ?? 0
                return false
            case "Failed to export batch.":
                counts.failed += batchSize ?? 0
                counts.failedExports += 1
                return counts.failedExports == 1
            case _ where message.hasPrefix("Spans were dropped"):
                let first = counts.dropped == 0
                counts.dropped += dropped ?? 1
                return first
            default:
                return true
            }
        }
    }
}

/// The command's log handler for swift-otel's diagnostics: counts them (`SwiftOTelDiagnostics`),
/// passes the first failure of each kind and whatever else reaches the command's level, with the
/// error swift-otel attaches to an event written into the line (the command's handler, written
/// for messages and metadata, would leave it out); silent once muted. Always at debug, whatever
/// swift-otel sets (`OTEL_LOG_LEVEL` included): the debug line of each exported batch is counted.
struct MutableLogHandler: LogHandler {
    var base: any LogHandler
    let diagnostics: SwiftOTelDiagnostics

    var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }
    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }
    var logLevel: Logger.Level {
        get { .debug }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        let batchSize = base[metadataKey: "batch_size"].flatMap { Int("\($0)") }
        let dropped = event.metadata?["dropped_count"].flatMap { Int("\($0)") }
        // Its warnings at the command's level; its notes ("Bootstrapping instrumentation system
        // ...") only at --log-level debug, as the built-in exporter says nothing of itself either.
        let shown = event.level >= .warning ? event.level >= base.logLevel : base.logLevel <= .debug
        guard diagnostics.count(event.message.description, batchSize: batchSize, dropped: dropped), shown else { return }
        var event = event
        if let error = event.error {
            event.message = "\(event.message) \(error)"
            event.error = nil
        }
        base.log(event: event)
    }
}
#endif
