/// The loop's part of retained snapshots (NBP-1 §18): the two topics a subscription that wants
/// its retained values subscribes, and taking them back when the snapshot ended or the
/// subscription went.
extension BusEventLoop {
    /// Subscribes the reply name (exactly), then the request, after the subscription's own data
    /// prefix: a broker that reads the request has the data prefix and the reply name in place
    /// for this connection. Looped back (an embedded bus) the bus's own values are handed over
    /// at once.
    func requestRetained(for storage: SubscriptionStorage) {
        guard let delivery = storage.retained else { return }
        if sockets.loopback {
            // An embedded bus keeps its own posts' values: handed over now, before any post
            // still queued reaches the new subscription.
            let count = receiver.handOverLocalRetained(subscriptionID: storage.id, pattern: storage.pattern)
            receiver.flush()
            delivery.complete(.delivered(count: count, takesAll: true))
            endIfOnlyRetained(storage)
            return
        }
        guard !sockets.subscribers.isEmpty,
            let reply = try? NotificationName(RetainedSnapshot.replyName(bus: topics.busID, token: storage.id))  // always valid: hex and digits
        else {
            delivery.complete(.none)
            endIfOnlyRetained(storage)
            return
        }
        receiver.expectSnapshot(subscriptionID: storage.id, pattern: storage.pattern, replyName: reply)
        let request = RetainedSnapshot.requestTopic(bus: topics.busID, token: storage.id, pattern: storage.pattern)
        if !perform([.subscribe(NamePattern(exactly: reply).subscriptionPrefix), .subscribe(request)]) {
            _ = receiver.cancelSnapshot(subscriptionID: storage.id)
            delivery.complete(.none)
            endIfOnlyRetained(storage)
        }
    }

    /// A subscription that wanted only the current state ends once it has it: its consumer takes
    /// what is buffered, then the sequence ends.
    private func endIfOnlyRetained(_ storage: SubscriptionStorage) {
        guard storage.endsAfterRetained, let removed = receiver.remove(id: storage.id) else { return }
        perform(topics.remove(removed.pattern))
        removed.finishFromBus()
    }

    /// Snapshots that ended in the last read: their topics go, their waiters resume.
    func endSnapshots() {
        for ended in receiver.takeEndedSnapshots() {
            guard let storage = receiver.routes.first(where: { $0.storage.id == ended.subscriptionID })?.storage else { continue }
            unsubscribeSnapshotTopics(reply: ended.replyName, subscriptionID: storage.id, pattern: storage.pattern)
            storage.retained?.complete(ended.outcome)
            endIfOnlyRetained(storage)
        }
    }

    /// A subscription went: a snapshot it still waited for is forgotten, its topics taken back.
    func forgetSnapshot(of storage: SubscriptionStorage) {
        guard let delivery = storage.retained else { return }
        if let reply = receiver.cancelSnapshot(subscriptionID: storage.id) {
            unsubscribeSnapshotTopics(reply: reply, subscriptionID: storage.id, pattern: storage.pattern)
        }
        delivery.complete(.none)
    }

    private func unsubscribeSnapshotTopics(reply: NotificationName, subscriptionID: UInt64, pattern: NamePattern) {
        let request = RetainedSnapshot.requestTopic(bus: topics.busID, token: subscriptionID, pattern: pattern)
        _ = perform([.unsubscribe(request), .unsubscribe(NamePattern(exactly: reply).subscriptionPrefix)])
    }
}
