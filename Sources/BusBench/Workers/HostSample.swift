import Foundation
import NotificationBus

/// A subscriber host's counters at one moment, summed over its views (cumulative since ready),
/// and the latency of the state updates made since the previous sample.
package struct HostSample: Codable, Sendable, Equatable {
    /// Wall clock, ns since the epoch.
    package var wallNanoseconds: UInt64
    /// Notifications handed to the views' code so far.
    package var delivered: UInt64 = 0
    /// Losses so far, by cause.
    package var lostUpstream: UInt64 = 0
    package var droppedLocalBuffer: UInt64 = 0
    package var missedWhileHidden: UInt64 = 0
    /// Notifications replayed on reappear so far.
    package var replayed: UInt64 = 0
    /// Main-actor busy time so far (runtime accounting), ns.
    package var mainActorBusyNanoseconds: UInt64 = 0
    /// Publish-to-state-update latency of the updates since the previous sample: how many, p50,
    /// p99 (ns; 0 when none).
    package var latencyCount: UInt64 = 0
    package var latencyP50: UInt64 = 0
    package var latencyP99: UInt64 = 0

    package init(wallNanoseconds: UInt64) {
        self.wallNanoseconds = wallNanoseconds
    }
}
