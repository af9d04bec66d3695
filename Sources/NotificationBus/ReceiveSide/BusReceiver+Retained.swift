#if canImport(Glibc)
import Glibc
#endif

/// A subscriber's side of retained snapshots (NBP-1 §18): the frames a broker sends under one
/// subscription's reply name, each entry handed to that subscription alone, marked retained.
///
/// Accounting: an entry of a stream this bus does not track starts tracking at its sequence
/// (the history before it is counted as joined late, NBP-1 §8), so the live notification that
/// follows is in order. An entry whose name reached this subscription live since it was made
/// is skipped: the subscription already has a value at least as new. "Since it was made" is
/// read from the streams' last sequences as they were when the snapshot was asked for
/// (`baseline`): no per-notification work on the live path.
extension BusReceiver {
    /// A snapshot asked for and not yet ended.
    struct PendingSnapshot {
        let subscriptionID: UInt64
        let pattern: NamePattern
        /// The last sequence of each stream the pattern matches, when the snapshot was asked for,
        /// or where another of this bus's snapshots started tracking it since (not a live
        /// notification: two retained subscriptions each get their values).
        var baseline: [StreamKey: UInt64]
        /// Several paths: how far the merged live stream of each stream the pattern matches had
        /// been handed on when the snapshot was asked for (to other subscriptions: this one did
        /// not exist yet).
        var mergedBaseline: [StreamKey: UInt64] = [:]
        /// Entries seen (a second broker's copy of one is skipped), and those handed over.
        var delivered: Set<DeliveredKey> = []
        var handedOver = 0
        /// Asked again after a reconnection (a broker that restarted): an entry this bus has
        /// seen (its stream's last sequence at or past it) is a repeat, not delivered; a newer
        /// one resumes its stream.
        var renewal = false
    }

    struct DeliveredKey: Hashable {
        let stream: StreamKey
        let sequence: UInt64
    }

    /// A snapshot that ended: the loop unsubscribes its topics and completes its delivery.
    struct EndedSnapshot {
        let subscriptionID: UInt64
        let replyName: NotificationName
        let outcome: RetainedDelivery.Outcome
    }

    /// The last sequence this bus holds for `key` (one path), the cached stream included.
    func lastSeen(_ key: StreamKey) -> UInt64? {
        if let cached = cachedStream, cached.key == key { return cached.last }
        return lastSequence[key]?.last
    }

    /// The subscription `subscriptionID` (already added) asks for its retained values under
    /// `replyName`.
    mutating func expectSnapshot(subscriptionID: UInt64, pattern: NamePattern, replyName: NotificationName, renewal: Bool = false) {
        var pending = makePending(subscriptionID: subscriptionID, pattern: pattern)
        pending.renewal = renewal
        pendingSnapshots[replyName] = pending
    }

    private func makePending(subscriptionID: UInt64, pattern: NamePattern) -> PendingSnapshot {
        var baseline: [StreamKey: UInt64] = [:]
        if let cached = cachedStream, pattern.matches(cached.key.name) { baseline[cached.key] = cached.last }
        for (key, value) in lastSequence where pattern.matches(key.name) { baseline[key] = value.last }
        var pending = PendingSnapshot(subscriptionID: subscriptionID, pattern: pattern, baseline: baseline)
        if pathCount > 1 { pending.mergedBaseline = merged.handedOn(matching: pattern) }
        return pending
    }

    // MARK: An embedded bus's own values

    /// Looped back (an embedded bus), this bus keeps its own posts' retained values: a frame
    /// handed to the local subscriptions with the retain bit is remembered first (one byte looked
    /// at for a frame without it).
    mutating func keepIfRetained(_ frame: UnsafeRawBufferPointer) {
        guard let base = frame.baseAddress,
            let nul = memchr(base, 0, min(frame.count, WireFormat.maximumNameLength + 1))
        else { return }
        let nameLength = base.distance(to: UnsafeRawPointer(nul))
        guard RetainedSnapshot.carriesRetain(frame, nameLength: nameLength) else { return }
        let now = Timestamps.monotonicNanoseconds()
        // This bus encoded the frame itself; one it could not decode would keep nothing. A
        // version 1 frame is kept as it is (no decode, no encode).
        if frame[nameLength + 1 + WireFormat.FixedHeaderOffset.version] == WireFormat.version {
            let name = { String(decoding: frame[0..<nameLength], as: UTF8.self) }
            noteLocalRetained(localRetained.remember(frame: frame, nameLength: nameLength, now: now), name: name)
            return
        }
        let notifications = (try? EnvelopeCodec.decodeAll(frame, maximumPayload: maximumPayload)) ?? []
        for notification in notifications where notification.asksToBeRetained {
            noteLocalRetained(localRetained.remember(notification, now: now)) { notification.name.rawValue }
        }
    }

    /// Counts what keeping one value evicted (the first eviction's name kept for the warning).
    private mutating func noteLocalRetained(_ outcome: RetainedStore.Outcome?, name: () -> String) {
        let evicted: Int
        let last: String
        switch outcome {
        case .keptEvicting(let count, let lastName):
            (evicted, last) = (count, lastName)
        case .tooLarge:
            (evicted, last) = (1, name())
        case .kept, .cleared, nil:
            return
        }
        if localRetainedEvictions == 0 { firstLocalRetainedEviction = last }
        localRetainedEvictions &+= UInt64(evicted)
    }

    /// Hands the subscription `subscriptionID` the values this bus keeps for `pattern` (looped
    /// back: no snapshot travels); returns how many.
    mutating func handOverLocalRetained(subscriptionID: UInt64, pattern: NamePattern) -> Int {
        guard let routeIndex = self.routeIndex(of: subscriptionID) else { return 0 }
        var pending = makePending(subscriptionID: subscriptionID, pattern: pattern)
        let (frames, expired) = localRetained.frames(matching: pattern, now: Timestamps.monotonicNanoseconds())
        localRetainedExpirations &+= UInt64(expired)
        _ = handOver(frames.map { $0[...] }, to: routeIndex, pending: &pending)
        return pending.handedOver
    }

    /// Hands each entry (one version 1 frame) to the route at `routeIndex`, under NBP-1 §18's
    /// rules (see the type's comment); returns whether any was handed over.
    private mutating func handOver(_ entries: [ArraySlice<UInt8>], to routeIndex: Int, pending: inout PendingSnapshot) -> Bool {
        var any = false
        for entry in entries {
            let decoded = entry.withUnsafeBytes { bytes in
                Result { () throws(RejectionReason) in
                    try EnvelopeCodec.decode(bytes, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount)
                }
            }
            guard case .success(var notification) = decoded else {
                if case .failure(let reason) = decoded { counters.rejected[reason, default: 0] += 1 }
                continue
            }
            // A value the pattern does not match, or a control name, is not this subscription's.
            guard pending.pattern.matches(notification.name), !ControlNames.isReserved(notification.name) else { continue }
            let key = StreamKey(publisherID: notification.publisherID, name: notification.name)
            guard pending.delivered.insert(DeliveredKey(stream: key, sequence: notification.sequence)).inserted else {
                counters.duplicatesDiscarded += 1
                continue
            }
            if pending.renewal && pathCount == 1 {
                if resume(&notification, key: key, routeIndex: routeIndex) {
                    pending.handedOver += 1
                    any = true
                }
                continue
            }
            if pathCount > 1, merged.isDuplicate(key, sequence: notification.sequence) {
                // Several brokers: the live stream already handed on this sequence or a newer one
                // (another broker's live copy came first and the stream had started), or holds it
                // to hand on in order. Its value is not handed over again, nor after a newer one,
                // unless all of that happened before this subscription was made (another
                // subscription's live stream): then it is this one's current value.
                let now = merged.handedOn(key)
                let beforeThisSubscription = now != nil && now == pending.mergedBaseline[key] && (now ?? 0) >= notification.sequence
                if !beforeThisSubscription {
                    counters.retainedSuperseded += 1
                    continue
                }
            }
            if pathCount == 1 {
                let now = lastSeen(key)
                if let now, now != pending.baseline[key], now >= notification.sequence {
                    // The name reached this subscription live since it was made, as new or newer.
                    counters.retainedSuperseded += 1
                    continue
                }
                if now == nil {
                    // Tracking starts here: the live stream that follows is in order, the history
                    // before it joined late (NBP-1 §8).
                    _ = trackSequence(publisherID: key.publisherID, name: key.name, sequence: notification.sequence)
                    trackingStartedBySnapshot(key, at: notification.sequence)
                }
            }
            if pathCount > 1 {
                // A slower broker's live copy of it may still come: discarded then.
                if retainedHandedOver.count >= Self.maximumRetainedHandedOver { retainedHandedOver.removeAll() }
                var kept = retainedHandedOver[key] ?? HandedOverValue(sequence: 0, subscriptions: [])
                if notification.sequence > kept.sequence { kept = HandedOverValue(sequence: notification.sequence, subscriptions: []) }
                kept.subscriptions.insert(routes[routeIndex].storage.id)
                retainedHandedOver[key] = kept
            }
            notification.flags |= WireFormat.Flag.retainedCopy
            counters.retainedReceived += 1
            pending.handedOver += 1
            remember(DeliveredKey(stream: key, sequence: notification.sequence), givenTo: routes[routeIndex].storage.id)
            routes[routeIndex].batch.append(notification: notification)
            any = true
        }
        return any
    }

    /// An entry of a snapshot asked again after a reconnection (one path): one this bus has seen
    /// is a repeat (counted, not delivered). A newer one, or one of a stream it does not track,
    /// resumes its stream as a live notification would: tracked (what was lost before it is a
    /// gap, exactly as live; a new stream joins late), and handed, marked retained, with that gap
    /// to every subscription its name matches, since the bus's tracking has moved past it.
    /// Returns whether it was delivered.
    private mutating func resume(_ notification: inout BusNotification, key: StreamKey, routeIndex: Int) -> Bool {
        let given = DeliveredKey(stream: key, sequence: notification.sequence)
        let subscriptionID = routes[routeIndex].storage.id
        if let seen = lastSeen(key), seen >= notification.sequence {
            counters.retainedRepeats += 1
            return false
        }
        if retainedGiven[subscriptionID]?.contains(given) == true {
            // Handed to it before, of a stream no longer tracked (its end of stream came).
            counters.retainedRepeats += 1
            return false
        }
        if let ended = endedRetainedStreams[key], ended >= notification.sequence {
            // Had live before its stream ended (a reviewer's run: posted, publisher exited,
            // broker restarted with --state: the value came a second time, marked retained).
            counters.retainedRepeats += 1
            return false
        }
        remember(given, givenTo: subscriptionID)
        var gap: Gap?
        switch trackSequence(publisherID: key.publisherID, name: key.name, sequence: notification.sequence) {
        case .inOrder: gap = nil
        case .gap(let found): gap = found
        case .duplicate:
            counters.retainedRepeats += 1
            return false
        }
        notification.flags |= WireFormat.Flag.retainedCopy
        counters.retainedReceived += 1
        for index in routes.indices where index == routeIndex || routes[index].pattern.matches(key.name) {
            if let gap { routes[index].batch.append(gap: gap) }
            routes[index].batch.append(notification: notification)
        }
        return true
    }

    /// Notes that the stream `key` ended (its end of stream) when this bus had it up to `last`,
    /// if a retained subscription matches it (only a renewal reads it); bounded, oldest first out.
    mutating func rememberEnded(_ key: StreamKey, last: UInt64) {
        guard routes.contains(where: { $0.storage.retained != nil && $0.pattern.matches(key.name) }) else { return }
        if endedRetainedStreams.updateValue(last, forKey: key) != nil { return }
        endedRetainedOrder.append(key)
        if endedRetainedStreams.count > Self.maximumRemembered {
            endedRetainedStreams[endedRetainedOrder[endedRetainedOrderStart]] = nil
            endedRetainedOrderStart += 1
        }
        // The order's forgotten head is dropped now and then, not per removal.
        if endedRetainedOrderStart >= 4_096 && endedRetainedOrderStart * 2 >= endedRetainedOrder.count {
            endedRetainedOrder.removeFirst(endedRetainedOrderStart)
            endedRetainedOrderStart = 0
        }
    }

    /// Notes that `value` was handed to `subscriptionID` as retained (bounded per subscription).
    private mutating func remember(_ value: DeliveredKey, givenTo subscriptionID: UInt64) {
        if retainedGiven[subscriptionID, default: []].count < Self.maximumRemembered {
            retainedGiven[subscriptionID, default: []].insert(value)
        }
    }

    /// Several paths: hands a notification the merge hands on to the routes in `targets`, but
    /// not to a subscription a snapshot already handed it (or a newer value of its stream) as
    /// retained: a duplicate for that one, counted. Forgets the handed-over value once the merge
    /// reaches its sequence (the merge discards later copies itself).
    mutating func deliverMerged(_ notification: BusNotification, key: StreamKey, targets: [Int]) {
        guard !retainedHandedOver.isEmpty, let kept = retainedHandedOver[key], notification.sequence <= kept.sequence else {
            if !retainedHandedOver.isEmpty { retainedHandedOver[key] = nil }  // past it: forgotten
            for index in targets { routes[index].batch.append(notification: notification) }
            return
        }
        for index in targets {
            if kept.subscriptions.contains(routes[index].storage.id) {
                counters.duplicatesDiscarded += 1
                continue
            }
            routes[index].batch.append(notification: notification)
        }
        if notification.sequence == kept.sequence { retainedHandedOver[key] = nil }
    }

    /// A snapshot started tracking `key` at `sequence`: the other snapshots still pending take it
    /// as their baseline, so the same value in theirs is handed over, not taken for a name that
    /// reached them live since they were asked for.
    private mutating func trackingStartedBySnapshot(_ key: StreamKey, at sequence: UInt64) {
        for index in pendingSnapshots.indices
        where pendingSnapshots.values[index].baseline[key] == nil && pendingSnapshots.values[index].pattern.matches(key.name) {
            pendingSnapshots.values[index].baseline[key] = sequence
        }
    }

    /// The subscription went before its snapshot ended: forgets it; returns its reply name.
    mutating func cancelSnapshot(subscriptionID: UInt64) -> NotificationName? {
        guard let entry = pendingSnapshots.first(where: { $0.value.subscriptionID == subscriptionID }) else { return nil }
        pendingSnapshots.removeValue(forKey: entry.key)
        return entry.key
    }

    /// The snapshots that ended since the last call.
    mutating func takeEndedSnapshots() -> [EndedSnapshot] {
        defer { endedSnapshots = [] }
        return endedSnapshots
    }

    /// One frame under a reply name (`_nbus.retained.`): hands its entries to the subscription
    /// that asked. A frame for no pending snapshot of this bus is not for it, and is dropped
    /// silently: another bus's snapshot, which a subscription to every name (the empty prefix)
    /// receives too, or a second broker's after the first ended. It is neither a loss nor an
    /// unknown control message (NBP-1 §18.3).
    mutating func receiveSnapshot(_ frame: UnsafeRawBufferPointer, nameLength: Int) -> Bool {
        let replyName = NotificationName(validatedBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameLength]))
        guard var pending = pendingSnapshots[replyName],
            let routeIndex = self.routeIndex(of: pending.subscriptionID)
        else {
            return false
        }
        let envelope: BusNotification
        do {
            // Entries are whole frames: the envelope may exceed the payload bound by their framing.
            envelope = try EnvelopeCodec.decode(
                frame, validatedNameLength: nameLength, name: replyName, maximumPayload: maximumPayload + 64 * 1024,
                maximumHeaderCount: maximumHeaderCount)
        } catch {
            counters.rejected[error, default: 0] += 1
            return false
        }
        guard let entries = RetainedSnapshot.entries(in: envelope.payload) else {
            counters.rejected[.batchInvalid, default: 0] += 1
            return false
        }
        let any = handOver(entries, to: routeIndex, pending: &pending)
        if envelope.headers[RetainedSnapshot.finalHeader] == "1" {
            pendingSnapshots.removeValue(forKey: replyName)
            let takesAll = envelope.headers[RetainedSnapshot.takesAllHeader] == "1"
            endedSnapshots.append(
                EndedSnapshot(
                    subscriptionID: pending.subscriptionID, replyName: replyName,
                    outcome: .delivered(count: pending.handedOver, takesAll: takesAll)))
        } else {
            pendingSnapshots[replyName] = pending
        }
        return any
    }
}
