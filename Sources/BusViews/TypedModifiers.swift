import FoundationEssentials
import NotificationBus

// Typed messages in views (issue 42, item 7): the onReceive style and the task style take a
// message type as they take a pattern, with the same lifetimes and metrics. A message this
// process's bus posted itself is handed over as the value (no coding, as the bus's own typed
// sequences do); one from another process is decoded on the consuming side (the main actor for
// onReceive, the task's isolation for a feed). What does not decode is counted in
// `ViewMetrics.undecodable` and skipped, or yielded by `messageEvents(of:)`.

extension ViewContent {
    /// `onReceive` for a message type: each of `type`'s messages runs `action` on the main actor,
    /// then `body` is re-evaluated. Subscribes `type.busObservedPattern` (every subject's names
    /// for a type with a `BusSubject`). One that does not decode runs nothing and is counted in
    /// `ViewMetrics.undecodable`.
    public func onReceive<M: BusMessage>(
        _ type: M.Type, buffering: BufferingPolicy = .default, start: SubscriptionStart = .now,
        perform action: @escaping @MainActor (M) -> Void
    ) -> ViewContent {
        adding(onReceive: M.busObservedPattern, buffering, start.for(M.self), Self.taking(action))
    }

    /// `onReceive(_:)` spelled as Foundation's `addObserver(of:for:)` without a subject.
    public func onReceive<M: BusMessage>(
        of type: M.Type, buffering: BufferingPolicy = .default, perform action: @escaping @MainActor (M) -> Void
    ) -> ViewContent {
        onReceive(type, buffering: buffering, perform: action)
    }

    /// `onReceive` for one subject's messages: subscribes exactly `<busName>.<subject id>`. An id
    /// that is not one name token subscribes nothing and is recorded in
    /// `ViewHost.subscriptionErrors`.
    public func onReceive<M: BusAsyncMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default,
        perform action: @escaping @MainActor (M) -> Void
    ) -> ViewContent where M.Subject: BusSubject {
        onReceive(subjectID: subject.busSubjectID, M.self, buffering, action)
    }

    /// `onReceive(of:for:)` for a main-actor message type.
    public func onReceive<M: BusMainActorMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default,
        perform action: @escaping @MainActor (M) -> Void
    ) -> ViewContent where M.Subject: BusSubject {
        onReceive(subjectID: subject.busSubjectID, M.self, buffering, action)
    }

    /// `onReceive` for the messages of `type` under any `pattern` (a family of names, one
    /// subject's name), each with the notification that carried it: its name, publisher,
    /// sequence, time and headers. One that does not decode runs nothing and is counted in
    /// `ViewMetrics.undecodable`.
    public func onReceive<M: BusMessage>(
        _ pattern: NamePattern, as type: M.Type, buffering: BufferingPolicy = .default,
        perform action: @escaping @MainActor (TypedNotification<M>) -> Void
    ) -> ViewContent {
        adding(onReceive: pattern, buffering, SubscriptionStart.now.for(M.self)) { notification, counter in
            guard let message = try? notification.message(as: M.self, countingIn: counter) else { return false }
            action(TypedNotification(message: message, notification: notification))
            return true
        }
    }

    /// A task that iterates this view's subscription to `pattern` as `type`'s messages
    /// (`messages.events` has each with its notification, gaps and undecodable ones in-band).
    public func task<M: BusMessage>(
        subscribing pattern: NamePattern, as type: M.Type, replay: ReplayPolicy = .none,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeedMessages<M>) async -> Void
    ) -> ViewContent {
        adding(typedTask: pattern, replay: replay, start: SubscriptionStart.now.for(M.self), buffering: buffering, priority: priority) { feed in
            await action(feed.messages(of: M.self))
        }
    }

    /// A task that iterates this view's subscription to `type`'s messages (`task(subscribing:)`
    /// with `feed.messages(of: type)`): lives while the view exists, keeps per `replay` while
    /// hidden. `messages.events` has gaps and undecodable notifications in-band.
    public func task<M: BusMessage>(
        subscribing type: M.Type, replay: ReplayPolicy = .none, start: SubscriptionStart = .now,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeedMessages<M>) async -> Void
    ) -> ViewContent {
        adding(typedTask: M.busObservedPattern, replay: replay, start: start.for(M.self), buffering: buffering, priority: priority) { feed in
            await action(feed.messages(of: M.self))
        }
    }

    /// `task(subscribing:)` for one subject's messages (`<busName>.<subject id>` exactly). An id
    /// that is not one name token subscribes nothing and is recorded in
    /// `ViewHost.subscriptionErrors`.
    public func task<M: BusAsyncMessage>(
        subscribing type: M.Type, of subject: M.Subject, replay: ReplayPolicy = .none,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeedMessages<M>) async -> Void
    ) -> ViewContent where M.Subject: BusSubject {
        task(subjectID: subject.busSubjectID, M.self, replay, buffering, priority, action)
    }

    /// `task(subscribing:of:)` for a main-actor message type.
    public func task<M: BusMainActorMessage>(
        subscribing type: M.Type, of subject: M.Subject, replay: ReplayPolicy = .none,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeedMessages<M>) async -> Void
    ) -> ViewContent where M.Subject: BusSubject {
        task(subjectID: subject.busSubjectID, M.self, replay, buffering, priority, action)
    }

    private func task<M: BusMessage>(
        subjectID: String, _ type: M.Type, _ replay: ReplayPolicy, _ buffering: BufferingPolicy, _ priority: TaskPriority,
        _ action: @escaping @isolated(any) @Sendable (ViewFeedMessages<M>) async -> Void
    ) -> ViewContent {
        let pattern: NamePattern
        do throws(BusError) { pattern = try M.busSubjectPattern(subjectID: subjectID) } catch { return adding(.unusable(error)) }
        return adding(typedTask: pattern, replay: replay, buffering: buffering, priority: priority) { feed in
            await action(feed.messages(of: M.self))
        }
    }

    private func onReceive<M: BusMessage>(
        subjectID: String, _ type: M.Type, _ buffering: BufferingPolicy, _ action: @escaping @MainActor (M) -> Void
    ) -> ViewContent {
        let pattern: NamePattern
        do throws(BusError) { pattern = try M.busSubjectPattern(subjectID: subjectID) } catch { return adding(.unusable(error)) }
        return adding(onReceive: pattern, buffering, SubscriptionStart.now.for(M.self), Self.taking(action))
    }

    /// The byte-level action of a typed `onReceive`: the message (the value itself for this
    /// bus's own post, else decoded here, on the main actor where `action` runs, and counted in
    /// the bus's `messagesDecoded`), or false.
    private static func taking<M: BusMessage>(
        _ action: @escaping @MainActor (M) -> Void
    ) -> @MainActor (BusNotification, MessageDecodeCounter) -> Bool {
        { notification, counter in
            guard let message = try? notification.message(as: M.self, countingIn: counter) else { return false }
            action(message)
            return true
        }
    }
}

extension ViewFeed {
    /// The feed's notifications as `type`'s messages, decoded on the consuming task's isolation
    /// (this bus's own posts taken as values); gaps are skipped (counted as for
    /// `notifications`), and what does not decode is counted in `ViewMetrics.undecodable` and
    /// skipped.
    public func messages<M: BusMessage>(of type: M.Type) -> ViewFeedMessages<M> {
        ViewFeedMessages(feed: self)
    }

    /// The feed as `MessageEvent`s of `type`: messages with their notification, gaps, and
    /// notifications that did not decode (counted in `ViewMetrics.undecodable` too), in-band.
    public func messageEvents<M: BusMessage>(of type: M.Type) -> ViewFeedMessageEvents<M> {
        ViewFeedMessageEvents(feed: self)
    }
}

extension SubscriptionStart {
    /// A typed modifier's start: a message type that declares itself retained
    /// (`BusMessage.busRetained`) starts with the current values, as the bus's typed
    /// subscriptions of it do.
    func `for`<M: BusMessage>(_ type: M.Type) -> SubscriptionStart {
        M.busRetained ? .retained : self
    }
}
