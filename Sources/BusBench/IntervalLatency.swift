import BusViews
import Foundation
import Histogram
import NotificationBus
import Synchronization

/// Publish-to-state-update latencies of one sampling interval, shared by a host's views.
final class IntervalLatency: Sendable {
    private let histogram = Mutex(
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .two))

    func record(publishedAt timestamp: UInt64) {
        let now = Timestamps.wallClockNanoseconds()
        let latency = max(1, min(now >= timestamp ? now - timestamp : 0, 600_000_000_000))
        histogram.withLock { _ = $0.record(latency) }
    }

    /// The interval's count, p50 and p99, and a fresh interval.
    func take() -> (count: UInt64, p50: UInt64, p99: UInt64) {
        histogram.withLock { histogram in
            defer { histogram.reset() }
            guard histogram.totalCount > 0 else { return (0, 0, 0) }
            return (histogram.totalCount, histogram.valueAtPercentile(50), histogram.valueAtPercentile(99))
        }
    }
}
