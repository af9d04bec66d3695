import NotificationBus

/// What a task-style consumer iterates: its view's subscription for one task run, as `BusEvent`s.
///
/// Kept notifications (per the replay policy) and gaps for what was missed come first, then live
/// ones. The sequence ends when the view disappears, the task restarts, or the view is destroyed.
public struct ViewFeed: AsyncSequence, Sendable {
    public typealias Element = BusEvent
    public typealias Failure = Never
    let storage: ViewFeedStorage
    let session: UInt64

    /// The pattern the view's subscription selects.
    public var pattern: NamePattern { storage.pattern }

    /// What the subscription keeps while the view is hidden.
    public var replay: ReplayPolicy { storage.replay }

    /// The same feed without gap events (they stay counted in the view's metrics).
    public var notifications: ViewFeedNotifications { ViewFeedNotifications(feed: self) }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(storage: storage, session: session) }

    /// Iterates one session; measures the time the loop spends between elements, and where.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        let storage: ViewFeedStorage
        let session: UInt64
        var handlingStarted: UInt64?

        /// The next event, measuring the previous one's handling on the caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> BusEvent? {
            if let started = handlingStarted {
                let onMainActor = actor.map { ($0 as AnyObject) === MainActor.shared } ?? false
                storage.recordHandling(nanoseconds: Timestamps.monotonicNanoseconds() &- started, onMainActor: onMainActor)
                handlingStarted = nil
            }
            guard let event = await storage.next(session: session) else { return nil }
            handlingStarted = Timestamps.monotonicNanoseconds()
            return event
        }

        /// The next event (callers without an isolation count as off the main actor).
        public mutating func next() async -> BusEvent? {
            await next(isolation: nil)
        }
    }
}

/// A `ViewFeed` that yields only notifications; gaps are skipped but stay counted.
public struct ViewFeedNotifications: AsyncSequence, Sendable {
    public typealias Element = BusNotification
    public typealias Failure = Never
    let feed: ViewFeed

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: feed.makeAsyncIterator()) }

    /// Iterates the feed's notifications.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        var events: ViewFeed.AsyncIterator

        /// The next notification, skipping gaps.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> BusNotification? {
            while let event = await events.next(isolation: actor) {
                if case .notification(let notification) = event { return notification }
            }
            return nil
        }

        /// The next notification (callers without an isolation count as off the main actor).
        public mutating func next() async -> BusNotification? {
            await next(isolation: nil)
        }
    }
}
