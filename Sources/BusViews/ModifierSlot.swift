import NotificationBus

/// The runtime of one modifier position of a node: the latest declaration, and what it holds.
@MainActor
final class ModifierSlot {
    var modifier: ViewModifier
    /// The `onReceive` subscription, alive while the node exists.
    var observation: ObservationToken?
    /// A task-style consumer's subscription, alive while the node exists.
    var feed: ViewFeedStorage?
    /// The running task of a `task` modifier.
    var running: Task<Void, Never>?

    init(_ modifier: ViewModifier) {
        self.modifier = modifier
    }

    /// A host dropped without `unmount()` still releases the feed's subscription (its pump would
    /// otherwise keep it until the bus closes); `onReceive` tokens release themselves.
    isolated deinit {
        feed?.close()
        running?.cancel()
    }

    var task: TaskModifier? {
        if case .task(let task) = modifier { return task }
        return nil
    }
}
