import Logging
import NotificationBus
import Prometheus
import Testing

@testable import BusOperations

// What `promtool check metrics` asks of a scrape: a HELP line for every metric. The bus's sampler
// through HelpTextMetricsFactory gives one to each metric it makes.
@Suite("Metrics: a HELP line for every metric the bus's sampler makes")
struct MetricsHelpTextTests {
    @Test("every TYPE line has its HELP line, with the text of BusMetricsService.helpTexts")
    func everyMetricHasHelp() {
        let registry = PrometheusCollectorRegistry()
        var stats = BusStats()
        stats.posted = 3
        stats.streamsJoinedLate = 2
        stats.notificationsBeforeJoining = 41
        let frozen = stats
        var subscription = SubscriptionStats()
        subscription.undecodable = 2  // a typed subscription's count of what did not decode
        let undecodable = subscription
        let sampler = BusMetricsSampler(
            busStats: { frozen }, subscriptions: [(pattern: "orders.>", stats: { undecodable })],
            factory: HelpTextMetricsFactory(registry: registry, help: BusMetricsService.helpTexts),
            logger: Logger(label: "test"), memoryLimit: 512 << 20)
        sampler.sample()
        let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
        let lines = text.split(separator: "\n")
        let typed = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        let helped = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { $0.split(separator: " ")[2] })
        #expect(typed.count >= 20, "\(text)")
        for name in typed {
            #expect(helped.contains(name), "no HELP for \(name)")
            #expect(BusMetricsService.helpTexts[String(name)] != nil, "\(name) has no text in helpTexts")
        }
        #expect(text.contains("nbus_bus_posted_total 3"), "\(text)")
        // NBP-1 §12.1's counters under the names of BusStats and `nbus subscribe`'s summary.
        #expect(text.contains("nbus_bus_streams_joined_late_total 2"), "\(text)")
        #expect(text.contains("nbus_bus_notifications_before_joining_total 41"), "\(text)")
        #expect(text.contains(#"nbus_subscription_undecodable_total{pattern="orders.>"} 2"#), "\(text)")
        #expect(text.contains("nbus_bus_memory_limit_bytes 536870912.0"), "\(text)")
    }
}
