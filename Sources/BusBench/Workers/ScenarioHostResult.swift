import Foundation
import NotificationBus

/// What a subscriber host reports (its `result` line).
package struct ScenarioHostResult: Codable, Sendable {
    package var event = "result"
    package var style: ViewStyle
    /// Per view.
    package var views: [ScenarioViewCounters]
    /// Publish-to-state-update latency over every view (`ViewMetrics.latency` merged).
    package var latency: LatencySummary
    /// From ready to the end of the drain, ns (the denominator of busy %).
    package var windowNanoseconds: UInt64
    /// How long a job enqueued on the main actor waited to run, sampled every 20 ms over the
    /// window from a task off the main actor: the main actor's responsiveness, ns.
    package var mainActorPing: LatencySummary
    /// The process's CPU time (getrusage) over the window, and over its whole life, ns.
    package var windowUserNanoseconds: UInt64
    package var windowSystemNanoseconds: UInt64
    package var totalUserNanoseconds: UInt64
    package var totalSystemNanoseconds: UInt64
    /// Peak resident set size (`VmHWM` of /proc/self/status), KiB.
    package var peakResidentKiB: UInt64
    /// Visibility changes made by the churn timer while the publisher was posting.
    package var churnTransitions: Int
    /// Whether the drain ended without everything accounted (stall or deadline).
    package var drainIncomplete: Bool
    /// The drain phase's duration, ns (publisher done to report).
    package var drainNanoseconds: UInt64
    /// Subscriptions that could not be made.
    package var subscriptionErrors: [String]
    /// End-of-stream records the host's bus processed.
    package var endOfStreamRecords: UInt64
    /// Which names the host's views subscribed to.
    package var subscription: ViewSubscription = .spread
    /// Notifications that reached the host's socket (`BusStats.notificationsReceived`: a batch
    /// frame counts as the notifications it carries, so CPU per frame stays CPU per notification,
    /// comparable with raw libzmq's per message): with exact-name subscriptions ZeroMQ filters the
    /// other names at the publisher, so they never count here.
    package var framesReceived: UInt64 = 0
    /// The host's counters about every 250 ms, from ready to the end of its drain.
    package var timeline: [HostSample] = []
    /// Wall-clock times (ns) of the churn's visibility changes (tab switch or scroll) while it ran.
    package var visibilityChanges: [UInt64] = []
}
