import NotificationBus

/// What a view's `body` describes: its children in a layout, its modifiers, and its render cost.
///
/// Layouts decide visibility: a stack shows every child, a tab view only the selected tab (all
/// tabs exist), a lazy list the rows in its window (a row exists from the first time it is in it).
public struct ViewContent {
    enum Layout {
        case stack([Child])
        case tabs(selection: ViewID, [Child])
        case lazyList(rowCount: Int, window: Range<Int>, row: @MainActor (Int) -> Child)
    }

    var layout: Layout
    var modifiers: [ViewModifier] = []
    var bodyCost: Duration?

    /// A stack of children, all visible while this view is; an absent child is destroyed.
    public init(@ChildrenBuilder _ children: () -> [Child] = { [] }) {
        layout = .stack(children())
    }

    /// A tab view: every tab exists, only the one whose id is `selection` is visible.
    public static func tabView(selection: ViewID, @ChildrenBuilder tabs: () -> [Child]) -> ViewContent {
        var content = ViewContent()
        content.layout = .tabs(selection: selection, tabs())
        return content
    }

    /// A lazy list of `rowCount` rows: rows inside `window` are visible; a row is made the first time
    /// it enters the window and kept (hidden) after it leaves.
    public static func lazyList(
        rowCount: Int, window: Range<Int>, row: @escaping @MainActor (Int) -> Child
    ) -> ViewContent {
        var content = ViewContent()
        content.layout = .lazyList(rowCount: max(0, rowCount), window: window, row: row)
        return content
    }

    // MARK: Modifiers

    /// Runs `action` each time the view appears.
    public func onAppear(perform action: @escaping @MainActor () -> Void) -> ViewContent {
        adding(.onAppear(action))
    }

    /// Runs `action` each time the view disappears.
    public func onDisappear(perform action: @escaping @MainActor () -> Void) -> ViewContent {
        adding(.onDisappear(action))
    }

    /// Subscribes while the view exists, visible or not: each notification runs `action` on the main
    /// actor and then re-evaluates `body`, whether or not the action changed any state. With
    /// `start: .retained` the first notifications are the current values (`isRetained`).
    public func onReceive(
        _ pattern: NamePattern, buffering: BufferingPolicy = .default, start: SubscriptionStart = .now,
        perform action: @escaping @MainActor (BusNotification) -> Void
    ) -> ViewContent {
        adding(
            .onReceive(pattern, buffering, start, typed: false) { notification, _ in
                action(notification)
                return true
            })
    }

    /// `onReceive` for a message type, with an action that says whether it took the notification.
    func adding(
        onReceive pattern: NamePattern, _ buffering: BufferingPolicy, _ start: SubscriptionStart,
        _ action: @escaping @MainActor (BusNotification, MessageDecodeCounter) -> Bool
    ) -> ViewContent {
        adding(.onReceive(pattern, buffering, start, typed: true, action))
    }

    /// `task(subscribing:)` for a message type: the feed's subscription takes this bus's own posts as values.
    func adding(
        typedTask pattern: NamePattern, replay: ReplayPolicy, start: SubscriptionStart = .now, buffering: BufferingPolicy,
        priority: TaskPriority, _ action: @escaping @isolated(any) @Sendable (ViewFeed) async -> Void
    ) -> ViewContent {
        let feed = TaskModifier.FeedRequest(pattern: pattern, replay: replay, start: start, buffering: buffering, typed: true)
        return adding(.task(TaskModifier(id: nil, priority: priority, feed: feed, operation: .feed(action))))
    }

    /// Starts `action` when the view appears and cancels it when it disappears (cooperatively).
    /// A closure written in `body` inherits the main actor; a `nonisolated` function runs off it.
    public func task(
        priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable () async -> Void
    ) -> ViewContent {
        adding(.task(TaskModifier(id: nil, priority: priority, feed: nil, operation: .plain(action))))
    }

    /// As `task(priority:_:)`, and also cancels the running task and starts a new one when `id` changes.
    public func task<ID: Equatable & Sendable>(
        id: ID, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable () async -> Void
    ) -> ViewContent {
        adding(.task(TaskModifier(id: id, priority: priority, feed: nil, operation: .plain(action))))
    }

    /// A task that iterates this view's subscription to `pattern`: the subscription lives while the
    /// view exists and keeps what arrives while it is hidden per `replay`, for the next run. With
    /// `start: .retained` it begins with the current values (`isRetained`), then live ones.
    public func task(
        subscribing pattern: NamePattern, replay: ReplayPolicy = .none, start: SubscriptionStart = .now,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeed) async -> Void
    ) -> ViewContent {
        let feed = TaskModifier.FeedRequest(pattern: pattern, replay: replay, start: start, buffering: buffering)
        return adding(.task(TaskModifier(id: nil, priority: priority, feed: feed, operation: .feed(action))))
    }

    /// As `task(subscribing:replay:start:buffering:priority:_:)`, restarted when `id` changes (the
    /// subscription stays; the new run starts with what the old one did not take).
    public func task<ID: Equatable & Sendable>(
        id: ID, subscribing pattern: NamePattern, replay: ReplayPolicy = .none, start: SubscriptionStart = .now,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeed) async -> Void
    ) -> ViewContent {
        let feed = TaskModifier.FeedRequest(pattern: pattern, replay: replay, start: start, buffering: buffering)
        return adding(.task(TaskModifier(id: id, priority: priority, feed: feed, operation: .feed(action))))
    }

    /// The busy work each evaluation of this body costs (overrides the host's default).
    public func bodyCost(_ cost: Duration) -> ViewContent {
        var content = self
        content.bodyCost = cost
        return content
    }

    func adding(_ modifier: ViewModifier) -> ViewContent {
        var content = self
        content.modifiers.append(modifier)
        return content
    }
}
