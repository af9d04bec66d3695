import CoreMetrics
import Logging
import NotificationBus
import ServiceLifecycle
import Synchronization

/// Samples a bus's counters (`Bus.stats`) and its subscriptions' (`SubscriptionStats`) into
/// swift-metrics every `interval`, so any process that uses the bus can export the same figures as
/// `nbus` does (`PrometheusMetricsFactory` for `/metrics`, or any other backend).
///
/// Counters advance by what the bus counted since the last sample; gauges take the value now. It
/// also logs, at debug level, what the bus counted and cannot report as it happens: CURVE
/// handshakes refused or failed, frames rejected as malformed, notifications lost upstream (a
/// high-water-mark drop or a reconnection), at most one line of each per sample.
public struct BusMetricsService: Service, CustomStringConvertible {
    /// A subscription to sample: its pattern (a metric dimension) and how to read its counters.
    public typealias SubscriptionSource = (pattern: String, stats: @Sendable () -> SubscriptionStats)

    private let interval: Duration
    private let sampler: BusMetricsSampler

    /// A sampler of `bus` and `subscriptions` into `factory`, logging to `logger`.
    public init(
        bus: Bus, subscriptions: [SubscriptionSource] = [], interval: Duration = .seconds(5),
        factory: any MetricsFactory, logger: Logger
    ) {
        self.interval = interval
        sampler = BusMetricsSampler(
            busStats: { bus.stats }, subscriptions: subscriptions, factory: factory, logger: logger,
            memoryLimit: bus.configuration.maximumResidentMemory)
    }

    /// `metrics every N`, as the service group's lines name it.
    public var description: String { "metrics every \(interval)" }

    /// One sample now (the service takes one at start, every `interval`, and at shutdown).
    public func sample() {
        sampler.sample()
    }

    public func run() async throws {
        sampler.sample()
        // What it throws is the sleep's CancellationError at graceful shutdown: the end this
        // loop waits for. The last sample below still records the final counters.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                sampler.sample()
            }
        }
        sampler.sample()
    }
}

extension BusMetricsService {
    /// The `# HELP` text of every metric the service makes, by name (`HelpTextMetricsFactory`
    /// writes them; swift-metrics itself has no place for them).
    public static let helpTexts: [String: String] = [
        "nbus_bus_posted_total": "Notifications posted on this bus.",
        "nbus_bus_sent_total": "Posted notifications handed to ZeroMQ.",
        "nbus_bus_unwanted_total": "Posted notifications no subscriber wanted (not sent).",
        "nbus_bus_unwanted_after_sending_total": "Of unwanted: posts of a name sent before, which a subscriber still there counts as lost.",
        "nbus_bus_unwanted_while_disconnected_total": "Of unwanted after sending: posted while a connection to a broker was down.",
        "nbus_bus_unsent_total": "Posted notifications never sent (the bus closed first, or ZeroMQ refused them).",
        "nbus_bus_frames_received_total": "Frames received by this bus's subscriber socket.",
        "nbus_bus_frames_sent_total": "Frames handed to ZeroMQ (a batch frame carries several notifications).",
        "nbus_bus_notifications_received_total": "Notifications received, counting each record of a batch frame.",
        "nbus_bus_rejected_batch_notifications_total": "Notifications in batch frames rejected whole as malformed.",
        "nbus_bus_unmatched_total": "Received notifications no subscription of this bus matched.",
        "nbus_bus_lost_upstream_total": "Notifications lost before this bus (sequence gaps per publisher and name).",
        "nbus_bus_duplicates_discarded_total":
            "Notifications discarded as copies of ones already had (several brokers bring each one; replays).",
        "nbus_bus_path_drops_total":
            "Notifications one of several brokers did not get because it refused sends past the path stall limit.",
        "nbus_bus_paths_parked_total": "Times a publisher with several brokers gave up on one for a while.",
        "nbus_bus_end_of_stream_records_total": "End-of-stream records received from closing publishers.",
        "nbus_bus_unknown_control_messages_total": "Control messages (_nbus.) this bus does not know.",
        "nbus_bus_malformed_end_of_stream_records_total": "End-of-stream records whose payload was malformed.",
        "nbus_bus_streams_joined_late_total": "Streams first seen past sequence 1 (joined late, or their head lost unseen).",
        "nbus_bus_notifications_before_joining_total": "Notifications before the first one seen of each stream joined late.",
        "nbus_bus_memory_limit_resets_total": "Times a binding bus passed its memory limit and dropped every connection.",
        "nbus_bus_stalled_subscribers_disconnected_total":
            "A binding publisher's subscribers that took nothing past their budget (or with a full queue), disconnected.",
        "nbus_bus_slow_subscribers_disconnected_total":
            "A binding publisher's subscribers that stayed past their budget for 10 s while it waited for them, disconnected.",
        "nbus_bus_subscriber_waits_total":
            "Times a binding publisher waited for a subscriber whose queue was full or past its budget (flow control).",
        "nbus_bus_slow_subscriber_episodes_total": "Times a binding publisher sent past a full subscriber that moved too slowly for 10 s.",
        "nbus_bus_sent_past_slow_subscribers_total": "Notifications a binding publisher sent past full subscribers.",
        "nbus_bus_own_retained_evictions_total":
            "Retained values of this bus's own posts (a binding publisher, an embedded bus) evicted to stay within its bounds.",
        "nbus_bus_own_retained_expirations_total": "Retained values of this bus's own posts dropped because their retain-for passed.",
        "nbus_bus_retained_renewals_total":
            "Retained snapshots asked for again because a subscribing connection came back (a broker that restarted).",
        "nbus_bus_retained_repeats_total": "Values of a renewed retained snapshot this bus had already seen: not delivered twice.",
        "nbus_bus_handshakes_refused_total": "CURVE handshakes this bus refused.",
        "nbus_bus_handshakes_failed_total": "CURVE handshakes that failed.",
        "nbus_bus_rejected_total": "Received frames rejected as malformed, by reason.",
        "nbus_bus_active_subscriptions": "Subscriptions open on this bus now.",
        "nbus_bus_tracked_streams": "Publisher and name streams whose sequence numbers this bus tracks now.",
        "nbus_bus_memory_limit_bytes": "The bus's memory guard (BusConfiguration.maximumResidentMemory): past this resident size a binding bus drops every connection.",
        "nbus_subscription_received_total": "Notifications that reached the subscription.",
        "nbus_subscription_delivered_total": "Notifications the subscription's consumer took.",
        "nbus_subscription_filtered_out_total": "Notifications the subscription's filter left out.",
        "nbus_subscription_lost_upstream_total": "Notifications of the subscription's pattern lost before this bus.",
        "nbus_subscription_dropped_local_buffer_total": "Notifications dropped by the subscription's buffering policy.",
        "nbus_subscription_gaps_total": "Gaps reported in-band to the subscription.",
        "nbus_subscription_undecodable_total": "Notifications a typed subscription could not decode as its message type.",
        "nbus_subscription_buffered": "Notifications buffered for the subscription's consumer now.",
    ]
}

/// The sampling itself, shared by the service's copies.
final class BusMetricsSampler: Sendable {
    private struct Last {
        var bus = BusStats()
        var subscriptions: [SubscriptionStats]
    }

    private let busStats: @Sendable () -> BusStats
    private let subscriptions: [BusMetricsService.SubscriptionSource]
    private let factory: any MetricsFactory
    private let logger: Logger
    private let last: Mutex<Last>
    private let busCounters: [(Counter, @Sendable (BusStats) -> UInt64)]
    private let rejectedCounters: [(RejectionReason, Counter)]
    private let activeSubscriptions: Gauge
    private let trackedStreams: Gauge
    private let subscriptionCounters: [[(Counter, @Sendable (SubscriptionStats) -> UInt64)]]
    private let bufferedGauges: [Gauge]
    /// The memory guard's limit and its gauge (only with a limit).
    private let memoryLimit: (bytes: UInt64, gauge: Gauge)?

    init(
        busStats: @escaping @Sendable () -> BusStats, subscriptions: [BusMetricsService.SubscriptionSource],
        factory: any MetricsFactory, logger: Logger, memoryLimit: UInt64? = nil
    ) {
        self.busStats = busStats
        self.subscriptions = subscriptions
        self.factory = factory
        self.logger = logger
        last = Mutex(Last(subscriptions: Array(repeating: SubscriptionStats(), count: subscriptions.count)))
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: "nbus_bus_\(name)_total", dimensions: dimensions, factory: factory)
        }
        busCounters = [
            (counter("posted"), { @Sendable s in s.posted }),
            (counter("sent"), { @Sendable s in s.sent }),
            (counter("unwanted"), { @Sendable s in s.unwanted }),
            (counter("unwanted_after_sending"), { @Sendable s in s.unwantedAfterSending }),
            (counter("unwanted_while_disconnected"), { @Sendable s in s.unwantedWhileDisconnected }),
            (counter("unsent"), { @Sendable s in s.unsent }),
            (counter("frames_sent"), { @Sendable s in s.framesSent }),
            (counter("frames_received"), { @Sendable s in s.framesReceived }),
            (counter("notifications_received"), { @Sendable s in s.notificationsReceived }),
            (counter("rejected_batch_notifications"), { @Sendable s in s.rejectedBatchNotifications }),
            (counter("unmatched"), { @Sendable s in s.unmatched }),
            (counter("lost_upstream"), { @Sendable s in s.lostUpstream }),
            (counter("duplicates_discarded"), { @Sendable s in s.duplicatesDiscarded }),
            (counter("path_drops"), { @Sendable s in s.pathDrops }),
            (counter("paths_parked"), { @Sendable s in s.pathsParked }),
            (counter("end_of_stream_records"), { @Sendable s in s.endOfStreamRecords }),
            (counter("unknown_control_messages"), { @Sendable s in s.unknownControlMessages }),
            (counter("malformed_end_of_stream_records"), { @Sendable s in s.malformedEndOfStreamRecords }),
            (counter("streams_joined_late"), { @Sendable s in s.streamsJoinedLate }),
            (counter("notifications_before_joining"), { @Sendable s in s.notificationsBeforeJoining }),
            (counter("memory_limit_resets"), { @Sendable s in s.memoryLimitResets }),
            (counter("stalled_subscribers_disconnected"), { @Sendable s in s.stalledSubscribersDisconnected }),
            (counter("slow_subscribers_disconnected"), { @Sendable s in s.slowSubscribersDisconnected }),
            (counter("subscriber_waits"), { @Sendable s in s.subscriberWaits }),
            (counter("slow_subscriber_episodes"), { @Sendable s in s.slowSubscriberEpisodes }),
            (counter("sent_past_slow_subscribers"), { @Sendable s in s.sentPastSlowSubscribers }),
            (counter("own_retained_evictions"), { @Sendable s in s.ownRetainedEvictions }),
            (counter("own_retained_expirations"), { @Sendable s in s.ownRetainedExpirations }),
            (counter("retained_renewals"), { @Sendable s in s.retainedRenewals }),
            (counter("retained_repeats"), { @Sendable s in s.retainedRepeats }),
            (counter("handshakes_refused"), { @Sendable s in s.handshakesRefused }),
            (counter("handshakes_failed"), { @Sendable s in s.handshakesFailed }),
        ]
        rejectedCounters = RejectionReason.allCases.map { ($0, counter("rejected", [("reason", $0.rawValue)])) }
        activeSubscriptions = Gauge(label: "nbus_bus_active_subscriptions", factory: factory)
        trackedStreams = Gauge(label: "nbus_bus_tracked_streams", factory: factory)
        subscriptionCounters = subscriptions.map { source in
            func counter(_ name: String) -> Counter {
                Counter(label: "nbus_subscription_\(name)_total", dimensions: [("pattern", source.pattern)], factory: factory)
            }
            return [
                (counter("received"), { @Sendable s in s.received }),
                (counter("delivered"), { @Sendable s in s.delivered }),
                (counter("filtered_out"), { @Sendable s in s.filteredOut }),
                (counter("lost_upstream"), { @Sendable s in s.lostUpstream }),
                (counter("dropped_local_buffer"), { @Sendable s in s.droppedLocalBuffer }),
                (counter("gaps"), { @Sendable s in s.gaps }),
                (counter("undecodable"), { @Sendable s in s.undecodable }),
            ]
        }
        bufferedGauges = subscriptions.map {
            Gauge(label: "nbus_subscription_buffered", dimensions: [("pattern", $0.pattern)], factory: factory)
        }
        self.memoryLimit = memoryLimit.map { ($0, Gauge(label: "nbus_bus_memory_limit_bytes", factory: factory)) }
    }

    func sample() {
        let now = busStats()
        let subscriptionStats = subscriptions.map { $0.stats() }
        let before = last.withLock { last in
            defer { last = Last(bus: now, subscriptions: subscriptionStats) }
            return last
        }
        for (counter, read) in busCounters { advance(counter, from: read(before.bus), to: read(now)) }
        for (reason, counter) in rejectedCounters {
            advance(counter, from: before.bus.rejected[reason] ?? 0, to: now.rejected[reason] ?? 0)
        }
        activeSubscriptions.record(Double(now.activeSubscriptions))
        trackedStreams.record(Double(now.trackedStreams))
        if let memoryLimit { memoryLimit.gauge.record(Double(memoryLimit.bytes)) }
        for (index, stats) in subscriptionStats.enumerated() {
            for (counter, read) in subscriptionCounters[index] {
                advance(counter, from: read(before.subscriptions[index]), to: read(stats))
            }
            bufferedGauges[index].record(Double(stats.buffered))
        }
        logChanges(before: before.bus, now: now)
    }

    private func advance(_ counter: Counter, from before: UInt64, to now: UInt64) {
        CounterAdvance.advance(counter, from: before, to: now)
    }

    /// Debug lines for what grew since the last sample (the bus has no event for these yet).
    private func logChanges(before: BusStats, now: BusStats) {
        let refused = now.handshakesRefused &- before.handshakesRefused
        let failed = now.handshakesFailed &- before.handshakesFailed
        if refused > 0 || failed > 0 {
            var fields: Logger.Metadata = ["refused": .stringConvertible(refused), "failed": .stringConvertible(failed)]
            if let last = now.lastHandshakeFailure { fields["last"] = "\(last)" }
            logger.debug("CURVE handshakes refused or failed since the last sample", metadata: fields)
        }
        if now.rejectedTotal > before.rejectedTotal {
            var fields: Logger.Metadata = ["count": .stringConvertible(now.rejectedTotal - before.rejectedTotal)]
            for reason in RejectionReason.allCases {
                let grew = (now.rejected[reason] ?? 0) &- (before.rejected[reason] ?? 0)
                if grew > 0 { fields[reason.rawValue] = .stringConvertible(grew) }
            }
            logger.debug("frames rejected as malformed since the last sample", metadata: fields)
        }
        if now.lostUpstream > before.lostUpstream {
            logger.debug(
                "notifications lost upstream since the last sample (a high-water-mark drop or a reconnection)",
                metadata: ["count": .stringConvertible(now.lostUpstream - before.lostUpstream)])
        }
    }
}
