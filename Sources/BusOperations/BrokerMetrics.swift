import Foundation
import NotificationBus
import Prometheus
import Synchronization

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
    private let replayBytesGauge: Gauge
    private let retainedNamesGauge: Gauge
    private let retainedBytesGauge: Gauge
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
            (counter("end_of_stream_records_too_large_total", "End-of-stream records over NBP-1's 64 KiB payload: forwarded, never kept for a replay."), { @Sendable s in s.endOfStreamRecordsTooLarge }),
            (counter("end_of_stream_records_evicted_total", "End-of-stream records dropped before their last replay (more than 4,096 or 16 MiB kept)."), { @Sendable s in s.endOfStreamRecordsEvicted }),
            (counter("accept_failures_total", "accept() failures (out of file descriptors)."), { @Sendable s in s.acceptFailures }),
            (counter("memory_limit_resets_total", "Times memory passed the limit and every connection was dropped."), { @Sendable s in s.memoryLimitResets }),
            (counter("forwarding_errors_total", "Errors of the forwarding loop's own socket calls (a bug if ever non-zero)."), { @Sendable s in s.forwardingErrors }),
            (counter("retained_evictions_total", "Retained values evicted to stay within --retain-names and --retain-bytes (NBP-1 §18)."), { @Sendable s in s.retainedEvictions }),
            (counter("retained_clears_total", "Retained values cleared by a retained post with an empty payload."), { @Sendable s in s.retainedClears }),
            (counter("retained_expirations_total", "Retained values dropped because their retain-for passed."), { @Sendable s in s.retainedExpirations }),
            (counter("retained_snapshots_total", "Retained snapshots sent to new subscriptions."), { @Sendable s in s.retainedSnapshots }),
            (counter("retained_notifications_sent_total", "Retained values sent in snapshots."), { @Sendable s in s.retainedNotificationsSent }),
            (counter("retained_state_damaged_total", "Damaged --state logs found at start (a torn or corrupt end, cut off and logged)."), { @Sendable s in s.retainedStateDamaged }),
            (counter("retained_state_bytes_cut_total", "Bytes cut off a damaged --state log's end at start."), { @Sendable s in s.retainedStateBytesCut }),
            (counter("retained_state_write_failures_total", "Writes to the --state log that failed (values stay in memory and are written again)."), { @Sendable s in s.retainedStateWriteFailures }),
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
        replayBytesGauge = gauge("end_of_stream_replay_bytes", "Bytes of the end-of-stream records kept for a replay (at most 16 MiB).")
        retainedNamesGauge = gauge("retained_names", "Names whose retained value the broker keeps now (NBP-1 §18).")
        retainedBytesGauge = gauge("retained_bytes", "Bytes of the retained values the broker keeps now (their encoded frames).")
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
                CounterAdvance.advance(counter, from: before, to: now)
            }
            last.withLock { $0 = stats }
            publishersGauge.set(Double(publishers))
            subscribersGauge.set(Double(subscribers))
            peakGauge.set(Double(stats.peakConnections))
            uptimeGauge.set(uptime)
            startGauge.set(startTime)
            loopAgeGauge.set(loopAge ?? -1)
            ownedIDsGauge.set(Double(stats.ownedPublisherIDs))
            replayBytesGauge.set(Double(stats.endOfStreamReplayBytes))
            retainedNamesGauge.set(Double(stats.retainedNames))
            retainedBytesGauge.set(Double(stats.retainedBytes))
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
