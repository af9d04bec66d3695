import Histogram

/// One view's counters, as a value the benchmark can copy, merge and report.
///
/// `latency` holds publish-to-state-update latencies in nanoseconds (the notification's wall-clock
/// publish time compared with the wall clock when the view's state was updated because of it).
public struct ViewMetrics: Sendable {
    /// Times `body` was evaluated.
    public var bodyEvaluations: UInt64 = 0
    /// Nanoseconds spent evaluating `body`, including its configured cost.
    public var bodyNanoseconds: UInt64 = 0
    /// State writes (each one re-evaluates `body`, coalesced within one delivery).
    public var stateUpdates: UInt64 = 0
    /// Notifications handed to this view's consumers (`onReceive` actions and task feeds).
    public var messagesHandled: UInt64 = 0
    /// Handled notifications after which the consumer that was handed them wrote no state: an
    /// `onReceive` action that wrote nothing (so it counts every message when the action only
    /// reads), or a task loop that skipped it (its filter). Another consumer's write does not count.
    public var messagesFiltered: UInt64 = 0
    /// Notifications the task feeds' subscriptions received, visible or hidden.
    public var feedReceived: UInt64 = 0
    /// Notifications a task-style consumer never saw because its view was hidden (not replayed).
    public var missedWhileHidden: UInt64 = 0
    /// Notifications kept while hidden and delivered on reappear.
    public var replayed: UInt64 = 0
    /// Gap events handed to task-style consumers (upstream loss and misses while hidden).
    public var gapsDelivered: UInt64 = 0
    /// Typed consumers (`onReceive(M.self)`, `feed.messages(of:)`): notifications whose payload
    /// did not decode as the message type, skipped (never a crash nor a silent drop).
    public var undecodable: UInt64 = 0
    /// Nanoseconds of this view's work that ran on the main actor: bodies, `onReceive` actions,
    /// appear and disappear callbacks, and task-feed handling when the loop runs on the main actor.
    public var mainActorBusyNanoseconds: UInt64 = 0
    /// Nanoseconds consumers spent handling notifications, wherever they ran.
    public var handlingNanoseconds: UInt64 = 0
    /// Times the view appeared.
    public var appearances: UInt64 = 0
    /// Times the view disappeared.
    public var disappearances: UInt64 = 0
    /// Task modifier runs started.
    public var tasksStarted: UInt64 = 0
    /// Task modifier runs cancelled (on disappear, id change or removal).
    public var tasksCancelled: UInt64 = 0
    /// Publish-to-state-update latency in nanoseconds (1 ns to 10 minutes, 3 significant digits).
    public var latency = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: ViewMetrics.highestLatency, numberOfSignificantValueDigits: .three)

    /// The largest latency recorded; larger samples are clamped to it.
    public static let highestLatency: UInt64 = 600_000_000_000

    /// `bodyNanoseconds` as a `Duration`.
    public var bodyTime: Duration { .nanoseconds(Int64(clamping: bodyNanoseconds)) }
    /// `mainActorBusyNanoseconds` as a `Duration`.
    public var mainActorBusyTime: Duration { .nanoseconds(Int64(clamping: mainActorBusyNanoseconds)) }
    /// `handlingNanoseconds` as a `Duration`.
    public var handlingTime: Duration { .nanoseconds(Int64(clamping: handlingNanoseconds)) }

    /// Empty counters.
    public init() {}

    /// Adds `other`'s counters and latencies to these (for totals over many views).
    public mutating func add(_ other: ViewMetrics) {
        bodyEvaluations += other.bodyEvaluations
        bodyNanoseconds += other.bodyNanoseconds
        stateUpdates += other.stateUpdates
        messagesHandled += other.messagesHandled
        messagesFiltered += other.messagesFiltered
        feedReceived += other.feedReceived
        missedWhileHidden += other.missedWhileHidden
        replayed += other.replayed
        gapsDelivered += other.gapsDelivered
        undecodable += other.undecodable
        mainActorBusyNanoseconds += other.mainActorBusyNanoseconds
        handlingNanoseconds += other.handlingNanoseconds
        appearances += other.appearances
        disappearances += other.disappearances
        tasksStarted += other.tasksStarted
        tasksCancelled += other.tasksCancelled
        latency.add(other.latency)
    }

    /// Records one latency sample in nanoseconds, clamped to 1...`highestLatency`.
    mutating func recordLatency(_ nanoseconds: UInt64) {
        _ = latency.record(Swift.min(Swift.max(nanoseconds, 1), Self.highestLatency))
    }
}
