import NotificationBus

/// One view in the host's tree: it *exists* while its identity is in the tree and is *visible*
/// between appear and disappear. Owns the view value, its state, its modifiers' runtime and its metrics.
@MainActor
public final class ViewNode {
    /// Where the node sits in the tree.
    public let path: ViewPath
    /// Whether the node is still in the tree (false once removed).
    public internal(set) var exists = true
    /// Whether the node is between appear and disappear.
    public internal(set) var isVisible = false

    let view: any View
    weak var host: ViewHost?
    /// Whether the parent's layout shows this child (it is visible when the parent is too).
    var shownByParent = false
    var slots: [ModifierSlot] = []
    var childNodes: [ViewID: ViewNode] = [:]
    var childOrder: [ViewID] = []
    /// Rows of a lazy list made so far (kept once made).
    var madeRows: Set<Int> = []
    /// State writes so far, read by `onReceive` delivery to tell filtered from handled.
    var stateUpdateCount: UInt64 = 0
    let recorder = ViewMetricsRecorder()

    init(path: ViewPath, view: any View, host: ViewHost) {
        self.path = path
        self.view = view
        self.host = host
    }

    /// The node's counters now.
    public var metrics: ViewMetrics { recorder.snapshot }

    /// Returns the node's counters once `condition` holds (they only grow, so this is a real signal).
    /// The snapshot is the one that first satisfied `condition`, which may fall inside a delivery:
    /// a handled notification is counted before the `body` evaluation it causes, so read `metrics`
    /// again after awaiting the main actor to compare counters one delivery changes together.
    @discardableResult
    public func waitForMetrics(_ condition: @escaping @Sendable (ViewMetrics) -> Bool) async -> ViewMetrics {
        await recorder.wait(until: condition)
    }

    /// The node's children, in the order `body` lists them.
    public var children: [ViewNode] { childOrder.compactMap { childNodes[$0] } }

    /// The child with identity `id`, if it exists.
    public func child(_ id: ViewID) -> ViewNode? { childNodes[id] }

    /// The counters of the bus subscriptions this node holds now (`onReceive` and task feeds).
    public var subscriptionStats: [SubscriptionStats] {
        slots.compactMap { slot in slot.observation?.stats ?? slot.feed?.subscriptionStats }
    }

    /// A `State` of this view was written: count it, record latency for a notification being
    /// handled by one of its task feeds, and re-evaluate `body`.
    func stateDidChange() {
        guard exists else { return }
        stateUpdateCount += 1
        let now = Timestamps.wallClockNanoseconds()
        var published: [UInt64] = []
        // Only the feed whose task wrote gets the credit (and the latency sample): crediting every
        // feed of the node made `messagesFiltered` depend on how deliveries interleaved.
        if let writer = ViewFeedStorage.running {
            for slot in slots {
                guard let feed = slot.feed, ObjectIdentifier(feed) == writer else { continue }
                if let timestamp = feed.noteStateUpdate() { published.append(timestamp) }
            }
        }
        recorder.update { metrics in
            metrics.stateUpdates += 1
            for timestamp in published { metrics.recordLatency(now >= timestamp ? now - timestamp : 0) }
        }
        host?.invalidate(self)
    }
}

extension ViewNode {
    /// A reader of this node's counters, usable off the main actor; it sees the subscriptions the
    /// node holds now (a later `body` that changes its modifiers is not followed).
    public var reader: ViewNodeReader {
        let sources: [@Sendable () -> SubscriptionStats] = slots.compactMap { slot in
            if let token = slot.observation { return { token.stats } }
            if let feed = slot.feed { return { feed.subscriptionStats } }
            return nil
        }
        return ViewNodeReader(recorder: recorder, sources: sources)
    }
}
