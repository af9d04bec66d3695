import Foundation
import NotificationBus
import Prometheus
import Synchronization

/// What a broker was started with, for `/varz`.
public struct BrokerDescription: Sendable {
    /// The frontend and backend endpoints, resolved.
    public var frontend: String
    /// The backend endpoint, resolved.
    public var backend: String
    /// Upstream brokers this one connects to.
    public var upstream: [String]
    /// Whether CURVE is on.
    public var curve: Bool
    /// The settings, by name (`hwm`, `slowAfterSeconds`...): numbers, so `/varz` has them as
    /// JSON numbers; one that is not known is left out.
    public var settings: [String: Double]
    /// The broker's memory guard (`BrokerConfiguration.memoryLimit`), in bytes; nil: none. On
    /// `/metrics` as `nbus_broker_memory_limit_bytes`, for an alert before the guard drops
    /// every connection.
    public var memoryLimit: UInt64?

    /// A description.
    public init(
        frontend: String, backend: String, upstream: [String], curve: Bool, settings: [String: Double],
        memoryLimit: UInt64? = nil
    ) {
        self.frontend = frontend
        self.backend = backend
        self.upstream = upstream
        self.curve = curve
        self.settings = settings
        self.memoryLimit = memoryLimit
    }
}

/// The monitoring endpoints of a running broker: `/metrics` (Prometheus text), `/healthz`,
/// `/varz`, `/connz`, `/subsz`.
///
/// Nothing here touches the forwarding path: every figure is read when a request comes, from the
/// counters the forwarding loop already publishes (`Broker.statistics()`), the connection records
/// of the sides' monitors, and the subscription table the loop keeps per subscription message.
public final class BrokerMonitor: Sendable {
    private let broker: Broker
    private let description: BrokerDescription
    /// Wall-clock ns and monotonic ns at start.
    private let startedAt: UInt64
    private let startedMonotonic: UInt64
    /// How old the forwarding loop's last round may be before `/healthz` fails (ns).
    private let stuckAfter: Duration
    private let metrics: BrokerMetrics

    /// A monitor of `broker`; `/healthz` fails once its forwarding loop has not begun a round for
    /// `stuckAfter` (5 s by default: five missed heartbeats).
    public init(broker: Broker, description: BrokerDescription, stuckAfter: Duration = .seconds(5)) {
        self.broker = broker
        self.description = description
        startedAt = Timestamps.wallClockNanoseconds()
        startedMonotonic = Timestamps.monotonicNanoseconds()
        self.stuckAfter = stuckAfter
        metrics = BrokerMetrics(curve: description.curve, memoryLimit: description.memoryLimit)
    }

    /// The routes to serve.
    public var routes: [MonitoringHTTPService.Route] {
        [
            ("/metrics", { await self.metricsResponse() }),
            ("/healthz", { self.healthResponse() }),
            ("/varz", { await self.varzResponse() }),
            ("/connz", { self.connzResponse() }),
            ("/subsz", { self.subszResponse() }),
        ]
    }

    private var uptimeSeconds: Double {
        Double(Timestamps.monotonicNanoseconds() &- startedMonotonic) / 1e9
    }

    /// The Prometheus exposition of the broker's figures now.
    public func metricsResponse() async -> MonitoringResponse {
        let stats = await broker.statistics()
        let connections = broker.openConnections()
        let text = metrics.render(
            stats: stats, publishers: connections.filter { $0.side == .publisher }.count,
            subscribers: connections.filter { $0.side == .subscriber }.count, uptime: uptimeSeconds,
            startTime: Double(startedAt) / 1e9, loopAge: broker.forwardingLoopAge().map(Timestamps.seconds),
            subscriptions: broker.subscriptions(), backlogs: broker.subscriberBacklogs())
        return MonitoringResponse(contentType: "text/plain; version=0.0.4; charset=utf-8", body: text)
    }

    /// 200 while the forwarding loop runs rounds; 503 when it is stuck or stopped.
    public func healthResponse() -> MonitoringResponse {
        guard let age = broker.forwardingLoopAge() else {
            return .text("unhealthy: the forwarding loop has stopped\n", status: 503)
        }
        if age > stuckAfter {
            let seconds = (Timestamps.seconds(age) * 10).rounded() / 10
            return .text("unhealthy: the forwarding loop has not run for \(seconds) s (stuck)\n", status: 503)
        }
        return .text("ok\n")
    }

    private struct Varz: Encodable {
        var version: String
        var startTime: String
        var startTimeSeconds: Double
        var uptimeSeconds: Double
        var frontend: String
        var backend: String
        var upstream: [String]
        var curve: Bool
        var settings: [String: Double]
        var counters: [String: UInt64]
        var connections: Int
        var peakConnections: Int
        var subscriptionTopics: Int
        var forwardingLoopAgeSeconds: Double?
    }

    /// Version, uptime, endpoints, settings and counters, as JSON.
    public func varzResponse() async -> MonitoringResponse {
        let stats = await broker.statistics()
        var counters: [String: UInt64] = [
            "fromPublishers": stats.fromPublishers, "bytesFromPublishers": stats.bytesFromPublishers,
            "toSubscribers": stats.toSubscribers, "bytesToSubscribers": stats.bytesToSubscribers,
            "notificationsFromPublishers": stats.notificationsFromPublishers,
            "notificationsToSubscribers": stats.notificationsToSubscribers,
            "subscriptionMessages": stats.subscriptionMessages, "backpressureWaits": stats.backpressureWaits,
            "slowSubscriberEpisodes": stats.slowSubscriberEpisodes,
            "sentPastSlowSubscribers": stats.sentPastSlowSubscribers, "endOfStreamReplays": stats.endOfStreamReplays,
            "stalledSubscribersDisconnected": stats.stalledSubscribersDisconnected,
            "slowSubscribersDisconnected": stats.slowSubscribersDisconnected,
            "subscriptionsNotForwarded": stats.subscriptionsNotForwarded, "acceptFailures": stats.acceptFailures,
            "memoryLimitResets": stats.memoryLimitResets, "forwardingErrors": stats.forwardingErrors,
            "foreignPublisherIDFrames": stats.foreignPublisherIDFrames, "ownedPublisherIDs": UInt64(stats.ownedPublisherIDs),
        ]
        if description.curve {
            for (side, counts) in [("publishers", stats.publisherAuthentication), ("subscribers", stats.subscriberAuthentication)] {
                counters["\(side)Admitted"] = counts.admitted
                counters["\(side)RefusedKeys"] = counts.refusedKeys
                counters["\(side)FailedHandshakes"] = counts.failedHandshakes
            }
        }
        let varz = Varz(
            version: NotificationBusVersion.current, startTime: Self.rfc3339(startedAt),
            startTimeSeconds: Double(startedAt) / 1e9, uptimeSeconds: uptimeSeconds,
            frontend: description.frontend, backend: description.backend, upstream: description.upstream,
            curve: description.curve, settings: description.settings, counters: counters,
            connections: stats.connections, peakConnections: stats.peakConnections,
            subscriptionTopics: broker.subscriptions().topics.count,
            forwardingLoopAgeSeconds: broker.forwardingLoopAge().map(Timestamps.seconds))
        return .json(varz)
    }

    private struct Connz: Encodable {
        struct Connection: Encodable {
            var side: String
            var endpoint: String
            var peerAddress: String?
            var processID: Int32?
            var userID: UInt32?
            var curveKey: String?
            var since: String
            var connectedSeconds: Double
        }
        var count: Int
        var connections: [Connection]
    }

    /// Each open connection: side, peer, CURVE key, since when.
    public func connzResponse() -> MonitoringResponse {
        let now = Timestamps.wallClockNanoseconds()
        let connections = broker.openConnections().map { connection in
            Connz.Connection(
                side: connection.side.rawValue, endpoint: connection.endpoint,
                peerAddress: connection.peerAddress.isEmpty ? nil : connection.peerAddress,
                processID: connection.processID, userID: connection.userID, curveKey: connection.curveKey,
                since: Self.rfc3339(connection.acceptedAt),
                connectedSeconds: Double(now > connection.acceptedAt ? now - connection.acceptedAt : 0) / 1e9)
        }
        return .json(Connz(count: connections.count, connections: connections))
    }

    private struct Subsz: Encodable {
        struct Pattern: Encodable {
            var pattern: String
            var subscribers: Int
            var busIDs: [String]
        }
        struct Prefix: Encodable {
            var prefix: String
            var announced: Bool
        }
        var topics: Int
        var untrackedTopics: UInt64
        var patterns: [Pattern]
        var prefixes: [Prefix]
        var foreignPrefixes: Int
    }

    /// The subscriptions subscribers hold: the patterns NotificationBus subscribers announced (one
    /// subscriber per bus id), and every data prefix (those no announcement explains belong to
    /// foreign subscribers, at least one each).
    public func subszResponse() -> MonitoringResponse {
        let subscriptions = broker.subscriptions()
        let prefixes = subscriptions.dataPrefixes
        return .json(
            Subsz(
                topics: subscriptions.topics.count, untrackedTopics: subscriptions.untracked,
                patterns: subscriptions.announcedPatterns.map {
                    Subsz.Pattern(pattern: $0.pattern, subscribers: $0.busIDs.count, busIDs: $0.busIDs)
                },
                prefixes: prefixes.map { Subsz.Prefix(prefix: $0.prefix, announced: $0.announced) },
                foreignPrefixes: prefixes.filter { !$0.announced }.count))
    }

    /// `2026-11-25T10:38:11.123Z` from nanoseconds since the epoch.
    static func rfc3339(_ nanoseconds: UInt64) -> String {
        let date = Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
        var style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        style.timeZone = TimeZone(identifier: "UTC") ?? .current
        return date.formatted(style)
    }
}

/// The broker's figures as Prometheus metrics, kept in a swift-prometheus registry (with HELP
/// text) and brought up to date from the broker's counters at each scrape: counters advance by
/// what the broker counted since the last scrape, gauges take the value now.
final class BrokerMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let last = Mutex(BrokerStatistics())
    private let counters: [(Counter, @Sendable (BrokerStatistics) -> UInt64)]
    private let publishersGauge: Gauge
    private let subscribersGauge: Gauge
    private let peakGauge: Gauge
    private let uptimeGauge: Gauge
    private let startGauge: Gauge
    private let loopAgeGauge: Gauge
    private let ownedIDsGauge: Gauge
    /// Serialises scrapes: each advances the counters from the last one's figures.
    private let scrape = Mutex(())

    private let topicsGauge: Gauge

    init(curve: Bool, memoryLimit: UInt64? = nil) {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        // No unit suffix: an empty unitName is left out of the metric's name.
        func counter(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Counter {
            registry.makeCounter(descriptor: MetricNameDescriptor(namespace: "nbus", subsystem: "broker", metricName: name, unitName: "", helpText: help), labels: labels)
        }
        func gauge(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Gauge {
            registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "nbus", subsystem: "broker", metricName: name, unitName: "", helpText: help), labels: labels)
        }
        let messages = "Messages through the broker, by direction (to subscribers: per message, not per subscriber)."
        let bytes = "Bytes through the broker, by direction."
        let notifications = "Notifications through the broker, by direction (a batch frame as its records)."
        var list: [(Counter, @Sendable (BrokerStatistics) -> UInt64)] = [
            (counter("messages_total", messages, [("direction", "from_publishers")]), { @Sendable s in s.fromPublishers }),
            (counter("messages_total", messages, [("direction", "to_subscribers")]), { @Sendable s in s.toSubscribers }),
            (counter("notifications_total", notifications, [("direction", "from_publishers")]), { @Sendable s in s.notificationsFromPublishers }),
            (counter("notifications_total", notifications, [("direction", "to_subscribers")]), { @Sendable s in s.notificationsToSubscribers }),
            (counter("bytes_total", bytes, [("direction", "from_publishers")]), { @Sendable s in s.bytesFromPublishers }),
            (counter("bytes_total", bytes, [("direction", "to_subscribers")]), { @Sendable s in s.bytesToSubscribers }),
            (counter("subscription_messages_total", "Subscription messages received from subscribers."), { @Sendable s in s.subscriptionMessages }),
            (counter("subscriptions_not_forwarded_total", "Subscriptions too long to forward to publishers."), { @Sendable s in s.subscriptionsNotForwarded }),
            (counter("backpressure_waits_total", "Times the broker held notifications back for a subscriber (its queue at its mark, or past its byte budget while moving)."), { @Sendable s in s.backpressureWaits }),
            (counter("slow_subscriber_episodes_total", "Slow-subscriber episodes (a subscriber past its budget made no room, and none could be named as stalled)."), { @Sendable s in s.slowSubscriberEpisodes }),
            (counter("sent_past_slow_subscribers_total", "Notifications sent past at least one full subscriber."), { @Sendable s in s.sentPastSlowSubscribers }),
            (counter("stalled_subscribers_disconnected_total", "Subscribers past their budget that took nothing for the broker's patience, disconnected."), { @Sendable s in s.stalledSubscribersDisconnected }),
            (counter("slow_subscribers_disconnected_total", "Subscribers past their budget that kept taking something but stayed past it for 10 s while the broker held back for them, disconnected."), { @Sendable s in s.slowSubscribersDisconnected }),
            (counter("end_of_stream_replays_total", "End-of-stream records sent again."), { @Sendable s in s.endOfStreamReplays }),
            (counter("accept_failures_total", "accept() failures (out of file descriptors)."), { @Sendable s in s.acceptFailures }),
            (counter("memory_limit_resets_total", "Times memory passed the limit and every connection was dropped."), { @Sendable s in s.memoryLimitResets }),
            (counter("forwarding_errors_total", "Errors of the forwarding loop's own socket calls (a bug if ever non-zero)."), { @Sendable s in s.forwardingErrors }),
            (counter("foreign_publisher_id_frames_total", "Frames refused because they carried a publisher id another frontend connection (with CURVE, another key) used first: never forwarded, never replayed."), { @Sendable s in s.foreignPublisherIDFrames }),
        ]
        if curve {
            let help = "CURVE handshakes by side and outcome (admitted, refused_key, failed)."
            for (side, read) in [
                ("publisher", { @Sendable (s: BrokerStatistics) in s.publisherAuthentication }),
                ("subscriber", { @Sendable (s: BrokerStatistics) in s.subscriberAuthentication }),
            ] {
                list.append((counter("curve_handshakes_total", help, [("side", side), ("outcome", "admitted")]), { @Sendable s in read(s).admitted }))
                list.append((counter("curve_handshakes_total", help, [("side", side), ("outcome", "refused_key")]), { @Sendable s in read(s).refusedKeys }))
                list.append((counter("curve_handshakes_total", help, [("side", side), ("outcome", "failed")]), { @Sendable s in read(s).failedHandshakes }))
            }
        }
        counters = list
        let connected = "Connected peers by side (publisher: frontend, subscriber: backend)."
        publishersGauge = gauge("connections", connected, [("side", "publisher")])
        subscribersGauge = gauge("connections", connected, [("side", "subscriber")])
        peakGauge = gauge("connections_peak", "The most connections open at once.")
        uptimeGauge = gauge("uptime_seconds", "Seconds since the broker started.")
        startGauge = gauge("start_time_seconds", "When the broker started, seconds since the Unix epoch.")
        ownedIDsGauge = gauge("owned_publisher_ids", "Publisher ids the broker knows the owning connection of (bounded).")
        loopAgeGauge = gauge("forwarding_loop_age_seconds", "Seconds since the forwarding loop last began a round (at most about 1 when well).")
        topicsGauge = gauge("subscription_topics", "Subscription topics (ZeroMQ prefixes, control topics included) the subscribers hold now.")
        if let memoryLimit {
            gauge("memory_limit_bytes", "The memory guard (--max-memory): past this resident size every connection is dropped.")
                .set(Double(memoryLimit))
        }
    }

    /// The HELP texts of the families written per scrape (their label sets come and go).
    static let dynamicHelp: [String: String] = [
        "nbus_broker_pattern_subscribers": "Subscribers (one per bus) holding each pattern NotificationBus subscribers announced.",
        "nbus_broker_subscription_prefixes": "Data prefixes subscribers hold, by whether an announced pattern explains them (false: foreign subscribers).",
        "nbus_broker_subscriber_unsent_bytes": "Bytes written to each subscriber connection that its peer has not taken yet (the kernel's socket buffer; what libzmq queues behind it is not counted), by peer.",
    ]

    func render(
        stats: BrokerStatistics, publishers: Int, subscribers: Int, uptime: Double, startTime: Double, loopAge: Double?,
        subscriptions: BrokerSubscriptions, backlogs: [(connection: BrokerConnection, unsentBytes: Int)]
    ) -> [UInt8] {
        var text = ExpositionText()
        let patterns = subscriptions.announcedPatterns
        text.family(
            "nbus_broker_pattern_subscribers", .gauge, help: Self.dynamicHelp["nbus_broker_pattern_subscribers"] ?? "",
            samples: patterns.map { ([("pattern", $0.pattern)], Double($0.busIDs.count)) })
        let prefixes = subscriptions.dataPrefixes
        let announced = prefixes.filter(\.announced).count
        text.family(
            "nbus_broker_subscription_prefixes", .gauge, help: Self.dynamicHelp["nbus_broker_subscription_prefixes"] ?? "",
            samples: [([("announced", "true")], Double(announced)), ([("announced", "false")], Double(prefixes.count - announced))])
        // One series per peer: a process with two connections (two buses) is one subscriber here.
        var byPeer: [String: (endpoint: String, bytes: Int)] = [:]
        var order: [String] = []
        for (connection, unsent) in backlogs {
            let peer = Self.peerLabel(connection)
            if byPeer[peer] == nil { order.append(peer) }
            byPeer[peer, default: (connection.endpoint, 0)].bytes += unsent
        }
        text.family(
            "nbus_broker_subscriber_unsent_bytes", .gauge, help: Self.dynamicHelp["nbus_broker_subscriber_unsent_bytes"] ?? "",
            samples: order.compactMap { peer in
                byPeer[peer].map { ([("endpoint", $0.endpoint), ("peer", peer)], Double($0.bytes)) }
            })
        ProcessMetrics.current().write(into: &text)
        return scrape.withLock { _ in
            let previous = last.withLock { $0 }
            for (counter, read) in counters {
                let now = read(stats)
                let before = read(previous)
                if now > before { counter.increment(by: Int64(clamping: now - before)) }
            }
            last.withLock { $0 = stats }
            publishersGauge.set(Double(publishers))
            subscribersGauge.set(Double(subscribers))
            peakGauge.set(Double(stats.peakConnections))
            uptimeGauge.set(uptime)
            startGauge.set(startTime)
            loopAgeGauge.set(loopAge ?? -1)
            ownedIDsGauge.set(Double(stats.ownedPublisherIDs))
            topicsGauge.set(Double(subscriptions.topics.count))
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return buffer + text.bytes
        }
    }

    /// A subscriber as a label: its address over TCP, `pid:N` over ipc (`fd:N` when neither is known).
    static func peerLabel(_ connection: BrokerConnection) -> String {
        if !connection.peerAddress.isEmpty { return connection.peerAddress }
        if let pid = connection.processID { return "pid:\(pid)" }
        return "fd:\(connection.fileDescriptor)"
    }
}
