import NotificationBus

/// One modifier as `body` declared it; the node keeps one `ModifierSlot` per position.
enum ViewModifier {
    case onAppear(@MainActor () -> Void)
    case onDisappear(@MainActor () -> Void)
    /// The action returns false for a notification it could not take (a typed one that did not
    /// decode): counted in `ViewMetrics.undecodable`, and `body` is not re-evaluated for it.
    /// `typed`: a message type's action, whose subscription takes this bus's own posts as values.
    case onReceive(NamePattern, BufferingPolicy, SubscriptionStart, typed: Bool, @MainActor (BusNotification, MessageDecodeCounter) -> Bool)
    case task(TaskModifier)
    /// A typed modifier whose subscription cannot be made (a subject id that is not one name
    /// token): recorded in `ViewHost.subscriptionErrors`; it does nothing, as a refused subscription.
    case unusable(BusError)

    /// Whether `other` at the same position keeps this slot's subscription (same kind and source).
    func keepsSlot(of other: ViewModifier) -> Bool {
        switch (self, other) {
        case (.onAppear, .onAppear), (.onDisappear, .onDisappear), (.unusable, .unusable):
            return true
        case (
            .onReceive(let pattern, let buffering, let start, let typed, _),
            .onReceive(let otherPattern, let otherBuffering, let otherStart, let otherTyped, _)
        ):
            return pattern == otherPattern && buffering == otherBuffering && start == otherStart && typed == otherTyped
        case (.task(let task), .task(let otherTask)):
            return task.feed == otherTask.feed
        default:
            return false
        }
    }
}

/// A `task` modifier: what to run, its priority, the id that restarts it, and its feed if any.
struct TaskModifier {
    /// The subscription a feed task iterates; kept by the node while it exists.
    struct FeedRequest: Equatable {
        var pattern: NamePattern
        var replay: ReplayPolicy
        var start: SubscriptionStart = .now
        var buffering: BufferingPolicy
        /// Read as messages (`task(subscribing: M.self)`): this bus's own posts come as values.
        var typed = false
    }

    enum Operation {
        case plain(@isolated(any) @Sendable () async -> Void)
        case feed(@isolated(any) @Sendable (ViewFeed) async -> Void)
    }

    var id: (any Equatable & Sendable)?
    var priority: TaskPriority
    var feed: FeedRequest?
    var operation: Operation

    /// Whether `other`'s id differs from this one's (so the task restarts).
    func idDiffers(from other: TaskModifier) -> Bool {
        switch (id, other.id) {
        case (nil, nil): return false
        case (let id?, let otherID?): return !Self.equal(id, otherID)
        default: return true
        }
    }

    private static func equal(_ lhs: any Equatable & Sendable, _ rhs: any Equatable & Sendable) -> Bool {
        func compare<Value: Equatable>(_ lhs: Value) -> Bool { (rhs as? Value) == lhs }
        return compare(lhs)
    }
}
