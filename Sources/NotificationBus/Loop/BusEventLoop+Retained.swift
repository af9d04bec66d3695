import ZeroMQ

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

    /// A subscribing connection came back (a broker that restarted, NBP-1 §18.5): every
    /// subscription that starts from retained values and has its snapshot asks for it again, on
    /// that connection's socket alone. The values arrive marked retained; those this bus has
    /// already seen are not delivered twice (`BusStats.retainedRepeats`). With several paths the
    /// others kept the stream: nothing is asked again. Returns whether anything was asked.
    func renewRetainedSnapshots() -> Bool {
        guard !sockets.subscriberReconnections.isEmpty else { return false }
        let reconnections = sockets.subscriberReconnections
        sockets.subscriberReconnections.removeAll()
        guard receiver.pathCount == 1, !sockets.loopback else { return false }
        var any = false
        for (path, endpoint) in reconnections where sockets.subscribers.indices.contains(path) {
            var renewed = 0
            for route in receiver.routes {
                let storage = route.storage
                // A snapshot still pending has its request subscribed: libzmq sends it again itself.
                guard storage.retained?.outcome != nil, !storage.endsAfterRetained,
                    !receiver.pendingSnapshots.values.contains(where: { $0.subscriptionID == storage.id }),
                    let reply = try? NotificationName(RetainedSnapshot.replyName(bus: topics.busID, token: storage.id))
                else { continue }
                let request = RetainedSnapshot.requestTopic(bus: topics.busID, token: storage.id, pattern: storage.pattern)
                do throws(ZMQError) {
                    try sockets.subscribers[path].subscribe(NamePattern(exactly: reply).subscriptionPrefix)
                    try sockets.subscribers[path].subscribe(request)
                } catch {
                    record(error, "asking for retained values again")
                    continue
                }
                receiver.expectSnapshot(subscriptionID: storage.id, pattern: storage.pattern, replyName: reply, renewal: true)
                renewed += 1
            }
            guard renewed > 0 else { continue }
            any = true
            receiver.counters.retainedRenewals &+= UInt64(renewed)
            configuration.logger?.info(
                "reconnected to \(endpoint): asked again for the retained values of \(renewed) subscription(s); values already seen are not delivered twice",
                metadata: ["side": "subscriber", "endpoint": "\(endpoint)"])
        }
        return any
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

/// A binding publisher's side of retained snapshots (NBP-1 §18.4): it keeps its own retained
/// posts (`BusCore.ownRetained`) and answers the requests of subscribers connected straight to it.
extension BusEventLoop {
    /// A subscription message that asks for retained values: answered at once when this bus
    /// keeps its own (its unsubscription swallowed) and true returned; false for any other
    /// message, or when this bus keeps none (the request is then an ordinary prefix, as before).
    ///
    /// The reply name was subscribed before the request on the same connection, so the frames
    /// reach the subscriber that asked alone. They go now, before posts still queued (their
    /// sequences are the subscriber's to sort: an older live one after its value is a duplicate,
    /// a newer one supersedes it). A frame the XPUB refuses (that subscriber's queue is full)
    /// ends the answer: its wait times out and says so. `takes-all` is 0: a publisher takes only
    /// its own posts, so `ready` still waits for its readiness echo.
    func answerRetainedRequest(_ message: [UInt8], on publisher: Socket) -> Bool {
        guard core.keepsOwnRetained, message.count > 1, message[1] == 0,
            message.dropFirst().starts(with: RetainedSnapshot.requestPrefix)
        else { return false }
        guard message[0] == 1, let (reply, pattern) = RetainedSnapshot.parseRequest(message.dropFirst()) else { return true }
        let now = Timestamps.monotonicNanoseconds()
        let (entries, expired) = core.ownRetained?.withLock { $0.frames(matching: pattern, now: now) } ?? ([], 0)
        if expired > 0 { core.ownRetainedExpirations.add(UInt64(expired), ordering: .relaxed) }
        var snapshot = RetainedSnapshotQueue(publisherID: configuration.publisherID)
        // One snapshot at a time: never past the queue's bounds (the store's are far below them).
        guard snapshot.enqueue(reply: reply, entries: entries, takesAll: false, now: Timestamps.wallClockNanoseconds()) else {
            return true
        }
        while let frame = snapshot.next {
            do throws(ZMQError) {
                guard try publisher.sendIfReady(frame) else { break }
            } catch {
                record(error, "sending retained values")
                break
            }
            posts.countSentBeside(frameBytes: frame.count)
            _ = snapshot.sent()
        }
        return true
    }
}
