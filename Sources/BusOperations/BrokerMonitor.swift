import Foundation
import NotificationBus
import Prometheus
import Synchronization

/// The monitoring endpoints of a running broker: `/metrics` (Prometheus text), `/healthz`,
/// `/varz`, `/connz`, `/subsz`, `/retainedz`.
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
            ("/retainedz", { await self.retainedzResponse() }),
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
            "endOfStreamRecordsTooLarge": stats.endOfStreamRecordsTooLarge,
            "endOfStreamRecordsEvicted": stats.endOfStreamRecordsEvicted,
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

    private struct Retainedz: Encodable {
        struct Value: Encodable {
            var name: String
            var bytes: Int
            var expiresAt: String?
            var expiresInSeconds: Double?
        }
        var count: Int
        var bytes: Int
        var truncated: Bool
        var names: [Value]
    }

    /// The most names `/retainedz` lists.
    public static let retainedzLimit = 1_000

    /// The retained values the broker keeps (NBP-1 §18): how many names and bytes, and the first
    /// `retainedzLimit` names in name order with each value's size and expiry (`truncated` when
    /// more are kept). Asked of the forwarding loop, which owns them.
    public func retainedzResponse() async -> MonitoringResponse {
        let listing = await broker.retainedValues(limit: Self.retainedzLimit)
        let now = Timestamps.wallClockNanoseconds()
        let names = listing.values.map { value in
            Retainedz.Value(
                name: value.name, bytes: value.bytes,
                expiresAt: value.expiresInSeconds.map { Self.rfc3339(now &+ UInt64(max(0, $0) * 1e9)) },
                expiresInSeconds: value.expiresInSeconds.map { ($0 * 1_000).rounded() / 1_000 })
        }
        return .json(
            Retainedz(
                count: listing.count, bytes: listing.bytes, truncated: listing.truncated, names: names))
    }

    /// `2026-11-25T10:38:11.123Z` from nanoseconds since the epoch.
    static func rfc3339(_ nanoseconds: UInt64) -> String {
        let date = Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
        var style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        style.timeZone = TimeZone(identifier: "UTC") ?? .current
        return date.formatted(style)
    }
}
