import CoreMetrics
import Prometheus

/// A swift-metrics factory that writes into a `PrometheusCollectorRegistry` with a `# HELP` line
/// for every metric whose name it has a text for (`promtool check metrics` rejects a metric
/// without one); the rest, and everything but counters and gauges, as `PrometheusMetricsFactory`
/// does. swift-metrics itself carries no help text, and swift-prometheus's own factory writes
/// an empty one, so `nbus subscribe --http` (publish, reply) failed promtool's lint on every metric.
public struct HelpTextMetricsFactory: MetricsFactory {
    private let registry: PrometheusCollectorRegistry
    private let plain: PrometheusMetricsFactory
    private let help: [String: String]

    /// A factory for `registry`, with `help` by metric name (`BusMetricsService.helpTexts` for the
    /// bus's metrics).
    public init(registry: PrometheusCollectorRegistry, help: [String: String]) {
        self.registry = registry
        self.plain = PrometheusMetricsFactory(registry: registry)
        self.help = help
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let text = help[label] else { return plain.makeCounter(label: label, dimensions: dimensions) }
        return registry.makeCounter(descriptor: Self.descriptor(label, text), labels: dimensions)
    }

    /// The whole label as the name (no unit part: the labels carry theirs, `_total`, `_bytes`).
    private static func descriptor(_ label: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: help)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        plain.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard !aggregate, let text = help[label] else {
            return plain.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
        }
        return registry.makeGauge(descriptor: Self.descriptor(label, text), labels: dimensions)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        plain.makeMeter(label: label, dimensions: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        plain.makeTimer(label: label, dimensions: dimensions)
    }

    public func destroyCounter(_ handler: any CounterHandler) { plain.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { plain.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { plain.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { plain.destroyMeter(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { plain.destroyTimer(handler) }
}
