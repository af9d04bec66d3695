import ArgumentParser
import BusOperations
import NotificationBus
import OTLPTracing
import Tracing

/// `--otlp-endpoint` and `--otlp-service-name`, on the commands that carry notifications
/// (publish, subscribe, request, reply): the bus's spans (docs/tracing.md) exported over OTLP/HTTP.
/// Without `--otlp-endpoint` no tracer is bootstrapped and the bus does no tracing work at all.
struct TracingOptions: ParsableArguments {
    @Option(
        name: .customLong("otlp-endpoint"),
        help: ArgumentHelp(
            "Export this command's spans (send, receive) to an OpenTelemetry receiver over OTLP/HTTP (protobuf, POST URL/v1/traces), e.g. http://127.0.0.1:4318; plain http only (for https, a local OpenTelemetry Collector). Spans are sent in batches every second; at exit the command waits up to 3 s for the last ones, and counts any it could not send. W3C trace context crosses in the headers either way. Exporter: \(TraceExport.exporterName).",
            valueName: "url"))
    var otlpEndpoint: String?

    @Option(
        name: .customLong("otlp-service-name"),
        help: ArgumentHelp("With --otlp-endpoint: the spans' service.name (default: nbus-COMMAND, e.g. nbus-subscribe).", valueName: "name"))
    var otlpServiceName: String?

    func validate() throws {
        if let otlpEndpoint {
            do { _ = try OTLPEndpoint(parsing: otlpEndpoint) } catch { throw ValidationError("--otlp-endpoint \(error)") }
        }
        if let otlpServiceName {
            guard otlpEndpoint != nil else { throw ValidationError("--otlp-service-name names the spans --otlp-endpoint exports: give --otlp-endpoint too") }
            guard !otlpServiceName.isEmpty, otlpServiceName.utf8.count <= 255 else {
                throw ValidationError("--otlp-service-name must be 1 to 255 bytes")
            }
        }
    }

    /// With --otlp-endpoint: bootstraps the tracer (before the bus opens: it reads the tracer
    /// then) and returns what exports its spans, for `finish`; nil (nothing bootstrapped) otherwise.
    func start(command: String) -> TraceExport? {
        guard let otlpEndpoint, let endpoint = try? OTLPEndpoint(parsing: otlpEndpoint) else { return nil }
        let serviceName = otlpServiceName ?? "nbus-\(command)"
        #if SwiftOTel
        do {
            return .swiftOTel(try SwiftOTelExport(endpoint: endpoint, serviceName: serviceName, command: command))
        } catch {
            logLine(.error, command, "OTLP: swift-otel did not start (\(error)): no span will be exported")
            return nil
        }
        #else
        var configuration = OTLPExporter.Configuration(endpoint: endpoint, serviceName: serviceName)
        configuration.scopeName = "nbus"
        configuration.scopeVersion = NotificationBusVersion.current
        configuration.logger = CommandLog.logger(command)
        let exporter = OTLPExporter(configuration)
        InstrumentationSystem.bootstrap(OTLPTracer(exporter: exporter))
        return .builtIn(exporter)
        #endif
    }

    /// How long the end of a command may wait for the last spans to go out.
    static let shutdownTimeout = Duration.seconds(3)

    /// Sends the spans still queued (within `shutdownTimeout`); logs what was lost, if anything.
    static func finish(_ export: TraceExport?, command: String) async {
        switch export {
        case nil:
            return
        case .builtIn(let exporter):
            let counts = exporter.shutdown(timeout: shutdownTimeout)
            let lost = counts.dropped + counts.failed + counts.unsent
            let text =
                "OTLP: \(counts.exported) span(s) exported to \(exporter.configuration.endpoint)"
                + (lost > 0 ? ", \(lost) lost (\(counts.dropped) dropped with the queue full, \(counts.failed) in \(counts.failedExports) failed export(s), \(counts.unsent) unsent at exit)" : "")
            if lost > 0 { logLine(.warning, command, text) } else { logLine(.debug, command, text) }
        #if SwiftOTel
        case .swiftOTel(let export):
            let ended = await export.finish(timeout: shutdownTimeout)
            let counts = export.diagnostics.counts
            // Spans still queued when the wait gave up are not known: said in words.
            let lost = counts.failed + counts.dropped
            let text =
                "OTLP: \(counts.exported) span(s) exported to \(export.endpoint) by swift-otel"
                + (lost > 0 ? ", \(lost) lost (\(counts.dropped) dropped with the queue full, \(counts.failed) in \(counts.failedExports) failed export(s))" : "")
                + (ended ? "" : "; swift-otel did not end within \(shutdownTimeout): spans it still held are lost too")
            if lost > 0 || !ended { logLine(.warning, command, text) } else { logLine(.debug, command, text) }
        #endif
        }
    }

    /// Runs `body` (a reply's post) in the trace `request` carries, when `traced`: its `send`
    /// span is then a child of the requester's, so a request and its reply make one trace (a
    /// `for await` loop's `receive` span is not the current one in the loop's body).
    static func continuing<Result: Sendable>(
        _ request: BusNotification, if traced: Bool, _ body: () async throws -> Result
    ) async throws -> Result {
        guard traced else { return try await body() }
        var context = InstrumentationContext.topLevel
        InstrumentationSystem.tracer.extract(request.headers, into: &context, using: HeadersExtractor())
        return try await InstrumentationContext.$current.withValue(context) { try await body() }
    }

    /// A notification's headers as the tracer's carrier.
    struct HeadersExtractor: Extractor {
        func extract(key: String, from carrier: NotificationHeaders) -> String? { carrier[key] }
    }
}

/// What `--otlp-endpoint` exports spans with: OTLPTracing's exporter, or swift-otel's in an `nbus`
/// built with the SwiftOTel trait (Package.swift).
enum TraceExport: Sendable {
    case builtIn(OTLPExporter)
    #if SwiftOTel
    case swiftOTel(SwiftOTelExport)
    #endif

    #if SwiftOTel
    static let exporterName = "swift-otel (this nbus was built with the SwiftOTel trait)"
    #else
    static let exporterName = "built in (an nbus built with the SwiftOTel trait uses swift-otel)"
    #endif
}
