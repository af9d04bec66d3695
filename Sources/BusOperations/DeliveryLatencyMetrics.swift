import NotificationBus
import Prometheus

/// `nbus_delivery_latency_seconds`: a histogram of the time from a notification's post to its
/// delivery to this process's consumer, where the bus can measure it. Every NBP/1 notification
/// carries its publish time (the publisher's wall clock, nanoseconds since the epoch), so the
/// subscriber's side is where the whole trip, through any broker, can be seen: `record` is called
/// as the consumer takes a notification (`nbus subscribe` as it prints one).
///
/// Between machines the figure holds their clocks' difference too (NTP keeps it near a
/// millisecond); a notification whose publish time is later than now (a clock behind the
/// publisher's) counts in the lowest bucket, and one with no publish time (0: a foreign producer
/// that sets none) is not counted.
public final class DeliveryLatencyMetrics: Sendable {
    /// The histogram's name.
    public static let name = "nbus_delivery_latency_seconds"
    /// Its HELP text.
    public static let helpText =
        "Seconds from a notification's post (its publish timestamp, the publisher's clock) to its delivery to this process's consumer."
    /// Bucket bounds: 100 µs (a local hop) to 10 s (a consumer or broker far behind).
    public static let buckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2_500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10),
    ]

    private let histogram: DurationHistogram

    /// A histogram in `registry`.
    public init(registry: PrometheusCollectorRegistry) {
        histogram = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "nbus", metricName: "delivery_latency", unitName: "seconds", helpText: Self.helpText),
            labels: [], buckets: Self.buckets)
    }

    /// Counts `notification`, delivered at `now` (nanoseconds since the epoch; nil: now).
    public func record(_ notification: BusNotification, now: UInt64? = nil) {
        guard notification.timestamp > 0 else { return }
        let now = now ?? Timestamps.wallClockNanoseconds()
        let nanoseconds = now > notification.timestamp ? now - notification.timestamp : 0
        histogram.recordNanoseconds(Int64(clamping: nanoseconds))
    }
}
