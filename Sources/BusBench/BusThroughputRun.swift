import Foundation

/// One bus throughput (or paced latency) run across two processes.
package struct BusThroughputRun: Codable, Sendable {
    /// What the subscriber's `for await` loop measured.
    package var subscriber: BusSubscriberResult
    /// What the publisher reported (nil when it was stopped before it could).
    package var publisher: BusPublisherResult?
    /// The subscriber's diagnostics, kept for a failed run.
    package var subscriberStderr: String
}
