import NotificationBus

/// Reads one node's counters from any thread: for samplers that must not wait for a busy main actor.
public struct ViewNodeReader: Sendable {
    let recorder: ViewMetricsRecorder
    let sources: [@Sendable () -> SubscriptionStats]

    /// The node's counters now.
    public var metrics: ViewMetrics { recorder.snapshot }

    /// The counters of the subscriptions the node held when the reader was made.
    public var subscriptionStats: [SubscriptionStats] { sources.map { $0() } }
}
