import NotificationBus

// Typed messages in views (issue 42, item 7): the onReceive style and the task style take a
// message type as they take a pattern, with the same lifetimes and metrics. What does not decode
// is counted in `ViewMetrics.undecodable` and skipped.

extension ViewContent {
    /// `onReceive` for a message type: each of `type`'s messages runs `action` on the main actor,
    /// then `body` is re-evaluated. Decoded on the main actor, where the action runs (as the byte
    /// form hands over its notification there); one that does not decode runs nothing and is
    /// counted in `ViewMetrics.undecodable`.
    public func onReceive<M: BusMessage>(
        _ type: M.Type, buffering: BufferingPolicy = .default, start: SubscriptionStart = .now,
        perform action: @escaping @MainActor (M) -> Void
    ) -> ViewContent {
        adding(onReceive: M.busObservedPattern, buffering, start) { notification in
            guard notification.contentType == .json || notification.contentType == .unspecified,
                let message = try? M.decodeBusPayload(notification.payload)
            else { return false }
            action(message)
            return true
        }
    }

    /// A task that iterates this view's subscription to `type`'s messages (`task(subscribing:)`
    /// with `feed.messages(of: type)`): lives while the view exists, keeps per `replay` while hidden.
    public func task<M: BusMessage>(
        subscribing type: M.Type, replay: ReplayPolicy = .none, start: SubscriptionStart = .now,
        buffering: BufferingPolicy = .default, priority: TaskPriority = .userInitiated,
        @_inheritActorContext _ action: @escaping @isolated(any) @Sendable (ViewFeedMessages<M>) async -> Void
    ) -> ViewContent {
        task(subscribing: M.busObservedPattern, replay: replay, start: start, buffering: buffering, priority: priority) { feed in
            await action(feed.messages(of: M.self))
        }
    }
}

extension ViewFeed {
    /// The feed's notifications decoded as `type`, on the consuming task's isolation; gaps are
    /// skipped (counted as for `notifications`), and what does not decode is counted in
    /// `ViewMetrics.undecodable` and skipped.
    public func messages<M: BusMessage>(of type: M.Type) -> ViewFeedMessages<M> {
        ViewFeedMessages(feed: self)
    }
}

/// A `ViewFeed` as message values of one type.
public struct ViewFeedMessages<Message: BusMessage>: AsyncSequence, Sendable {
    public typealias Element = Message
    public typealias Failure = Never
    let feed: ViewFeed

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: feed.makeAsyncIterator(), storage: feed.storage) }

    /// Iterates the feed's messages.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        var events: ViewFeed.AsyncIterator
        let storage: ViewFeedStorage

        /// The next message, skipping gaps and counting what does not decode.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Message? {
            while let event = await events.next(isolation: actor) {
                guard case .notification(let notification) = event else { continue }
                if notification.contentType == .json || notification.contentType == .unspecified,
                    let message = try? Message.decodeBusPayload(notification.payload)
                {
                    return message
                }
                storage.noteUndecodable()
            }
            return nil
        }

        public mutating func next() async -> Message? {
            await next(isolation: nil)
        }
    }
}
