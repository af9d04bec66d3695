import BusOperations
import Foundation
import NotificationBus
import ServiceLifecycle
import Synchronization
import ToolSupport

/// Prints the events of every pattern's task, one whole line at a time, and counts the
/// notifications: exactly `limit` at most, however many tasks print at once.
final class EventPrinter: Sendable {
    private let printed = Mutex<Int>(0)
    let limit: Int?
    let format: OutputFormat
    let latency: DeliveryLatencyMetrics?

    init(limit: Int?, format: OutputFormat, latency: DeliveryLatencyMetrics? = nil) {
        self.limit = limit
        self.format = format
        self.latency = latency
    }

    /// Prints `event` unless the limit was reached; returns whether the limit is reached now.
    func print(_ event: BusEvent) -> Bool {
        let line = format.render(event) + "\n"
        return printed.withLock { printed in
            if let limit, printed >= limit { return true }
            FileWriter.standardOutput.write(line)
            if case .notification(let notification) = event {
                printed += 1
                latency?.record(notification)
            }
            return limit.map { printed >= $0 } ?? false
        }
    }

    /// Notifications printed so far.
    var count: Int { printed.withLock { $0 } }
}
