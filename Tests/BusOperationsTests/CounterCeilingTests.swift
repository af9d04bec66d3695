import Logging
import NotificationBus
import Prometheus
import Synchronization
import Testing

@testable import BusOperations

// A count a peer can drive past Int64.max (lostUpstream follows a publisher's sequence numbers)
// must never read negative on /metrics: Prometheus would take it for a counter reset.
@Suite("Metrics: counters stop at Int64.max, never wrap")
struct CounterCeilingTests {
    @Test("the increment between two samples is clamped to the ceiling on both sides")
    func increments() {
        let max = UInt64(Int64.max)
        #expect(CounterAdvance.increment(from: 0, to: 5) == 5)
        #expect(CounterAdvance.increment(from: 5, to: 5) == 0)
        #expect(CounterAdvance.increment(from: 9, to: 5) == 0)
        #expect(CounterAdvance.increment(from: 1, to: max + 3) == Int64.max - 1)
        #expect(CounterAdvance.increment(from: max + 3, to: UInt64.max) == 0)
        #expect(CounterAdvance.increment(from: 0, to: UInt64.max) == Int64.max)
    }

    @Test("a forged jump in lostUpstream and notificationsBeforeJoining reads Int64.max on /metrics, not a negative count")
    func samplerNeverWraps() {
        let registry = PrometheusCollectorRegistry()
        let current = Mutex(BusStats())
        let sampler = BusMetricsSampler(
            busStats: { current.withLock { $0 } }, subscriptions: [],
            factory: HelpTextMetricsFactory(registry: registry, help: BusMetricsService.helpTexts),
            logger: Logger(label: "test"), memoryLimit: nil)
        func scrape() -> String { String(decoding: registry.emitToBuffer(), as: UTF8.self) }
        current.withLock { $0.lostUpstream = 1 }
        sampler.sample()
        #expect(scrape().contains("nbus_bus_lost_upstream_total 1\n"), "\(scrape())")
        // What two frames of one publisher id, sequences 1 then 2^63 + 2, make the receiver count.
        current.withLock {
            $0.lostUpstream = 9_223_372_036_854_775_810
            $0.notificationsBeforeJoining = .max
        }
        sampler.sample()
        sampler.sample()
        let text = scrape()
        #expect(text.contains("nbus_bus_lost_upstream_total 9223372036854775807\n"), "\(text)")
        #expect(text.contains("nbus_bus_notifications_before_joining_total 9223372036854775807\n"), "\(text)")
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("nbus_") && $0.contains(" -") }, "\(text)")
    }
}
