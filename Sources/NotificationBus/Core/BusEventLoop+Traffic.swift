import ZeroMQ

/// The event loop's reads and sends: posts out of the XPUB (and, looped back, straight to local
/// subscriptions), subscription messages in from the XPUB, notifications in from the SUB.
extension BusEventLoop {
    // MARK: Publisher side

    /// Hands queued frames to ZeroMQ. Without back-pressure XPUB never refuses (it drops at the
    /// HWM, which subscribers see as gaps); with it, a refused frame waits for the next round.
    func sendPending() -> Bool {
        assertOnLoopThread()
        guard let publisher = sockets.publisher else {
            stats.unsent += UInt64(notifications(inPending: pending.sentCount..<pending.count))
            pending.removeAll()
            return false
        }
        if !publisherPaths.paths.isEmpty { return sendPendingToPaths() }
        guard sockets.loopback else { return send(pending: publisher, mode: .dontWait) > 0 }
        var progressed = false
        while true {
            // Route the next run of posts to local subscriptions, unless a full one holds them back.
            if !readingPaused && loopbackRouted < pending.count {
                let end = min(pending.count, loopbackRouted + Self.batchLimit)
                for index in loopbackRouted..<end {
                    pending.withMessageBytes(at: index) { receiver.deliverLocally($0) }
                }
                loopbackRouted = end
                if receiver.flush() { readingPaused = true }
                progressed = true
            }
            // Then hand the routed ones to ZeroMQ, for subscribers elsewhere.
            if send(pending: publisher, mode: .dontWait) > 0 { progressed = true }
            if pending.sentCount < loopbackRouted || readingPaused || loopbackRouted == pending.count { break }
        }
        return progressed
    }

    /// Sends `pending` in order until ZeroMQ refuses one (it stays queued); returns how many
    /// frames went. `stats.sent` and `stats.unsent` count notifications (a batch as its records).
    @discardableResult
    func send(pending publisher: Socket, mode: BlockingMode) -> Int {
        let start = pending.sentCount
        // Looped back, only what local subscriptions have had may go out.
        let limit = sockets.loopback ? loopbackRouted : pending.count
        var skipped = 0
        var skippedNotifications = 0
        while pending.sentCount < limit && !contextTerminated {
            do {
                _ = try publisher.send(&pending, mode: mode, limit: limit)
                break  // everything sent, or refused (would block)
            } catch {
                // A frame ZeroMQ rejects outright cannot be retried; it is counted as unsent.
                record(error, "sending a notification")
                skippedNotifications += notifications(inPendingAt: pending.sentCount)
                pending.skipNext()
                skipped += 1
            }
        }
        let frames = pending.sentCount - start - skipped
        let sent = notifications(inPending: start..<pending.sentCount) - skippedNotifications
        stats.sent += UInt64(sent)
        stats.framesSent += UInt64(frames)
        stats.unsent += UInt64(skippedNotifications)
        return frames + skipped
    }

    /// The notifications in `pending`'s frames at `range`: one each, batch frames their count.
    /// Read from `pendingOffsets`, not the frames: ZeroMQ empties a message it sends.
    func notifications(inPending range: Range<Int>) -> Int {
        guard pendingHasBatches else { return range.count }
        return pendingOffsets[range.upperBound] - pendingOffsets[range.lowerBound]
    }

    /// The notifications in the frame `pending` holds at `index`.
    private func notifications(inPendingAt index: Int) -> Int {
        notifications(inPending: index..<(index + 1))
    }

    // MARK: Batching

    /// Merges each run of consecutive posts of one name in the freshly taken `pending` into one
    /// batch frame (NBP-1 §2.3), in place and in order. Only what is queued already is merged,
    /// so batching adds no wait: a post that arrives alone stays alone. A run ends at another
    /// name, at 1024 posts, or where the frame would pass `configuration.batching`'s size; a
    /// post whose frame alone reaches that size goes alone. Control names are never merged.
    ///
    /// Costs one copy of the merged posts' bytes into the batch frame, paid back many times
    /// over by handing ZeroMQ one message instead of many (NBP-1 §10).
    func coalescePending() {
        pendingHasBatches = false
        let maximumBytes = configuration.batching.maximumFrameBytes
        guard maximumBytes > 0, pending.count >= 2, pending.sentCount == 0 else { return }
        var merging = false
        var index = 0
        while index < pending.count {
            let run = runOfOneName(from: index, maximumBytes: maximumBytes)
            if run.end - index >= 2 {
                if !merging {
                    // The first run found: what came before it moves over as it is.
                    pendingOffsets.removeAll(keepingCapacity: true)
                    pendingOffsets.append(0)
                    for earlier in 0..<index {
                        pending.moveMessage(at: earlier, to: &coalesced)
                        pendingOffsets.append(earlier + 1)
                    }
                    merging = true
                }
                appendBatch(of: index..<run.end, nameLength: run.nameLength, size: run.size)
            } else if merging {
                pending.moveMessage(at: index, to: &coalesced)
                pendingOffsets.append(pendingOffsets[pendingOffsets.count - 1] + 1)
            }
            index = run.end
        }
        guard merging else { return }
        swap(&pending, &coalesced)
        coalesced.removeAll()  // the originals of merged posts, and the emptied slots of moved ones
        pendingHasBatches = true
    }

    /// Where the run of posts of one name that starts at `start` ends, the name's length, and the
    /// size of its batch frame.
    private func runOfOneName(from start: Int, maximumBytes: Int) -> (end: Int, nameLength: Int, size: Int) {
        pending.withMessageBytes(at: start) { first -> (end: Int, nameLength: Int, size: Int) in
            let alone = (end: start + 1, nameLength: 0, size: 0)
            let limit = min(first.count, WireFormat.maximumNameLength + 1)
            var nameLength = 0
            while nameLength < limit && first[nameLength] != 0 { nameLength += 1 }
            let headerEnd = nameLength + 1 + WireFormat.fixedHeaderSize
            guard nameLength < limit, first.count >= headerEnd, first.count < maximumBytes,
                first[nameLength + 1] == WireFormat.version,
                !ControlNames.isReserved(nameBytes: UnsafeRawBufferPointer(rebasing: first[0..<nameLength]))
            else { return alone }
            // Name, NUL and publisher id: the same in every record of a batch.
            let publisherOffset = nameLength + 1 + WireFormat.FixedHeaderOffset.publisherID
            let publisher = UnsafeRawBufferPointer(rebasing: first[publisherOffset..<(publisherOffset + 8)])
            let name = UnsafeRawBufferPointer(rebasing: first[0...nameLength])
            var size = nameLength + 1 + WireFormat.batchHeaderSize
                + EnvelopeCodec.batchedRecordSize(ofFrameCount: first.count, nameLength: nameLength)
            var end = start + 1
            while end < pending.count && end - start < WireFormat.maximumBatchRecords {
                let next = pending.withMessageBytes(at: end) { frame -> Int? in
                    guard frame.count >= headerEnd, frame.hasPrefix(name), frame[nameLength + 1] == WireFormat.version,
                        UnsafeRawBufferPointer(rebasing: frame[publisherOffset..<(publisherOffset + 8)])
                            .elementsEqual(publisher)
                    else { return nil }
                    return EnvelopeCodec.batchedRecordSize(ofFrameCount: frame.count, nameLength: nameLength)
                }
                guard let next, size + next <= maximumBytes else { break }
                size += next
                end += 1
            }
            return end - start >= 2 ? (end, nameLength, size) : alone
        }
    }

    /// Appends to `coalesced` one batch frame of the posts in `range`; if libzmq cannot allocate
    /// it, the posts move over one by one instead (nothing is lost to batching).
    private func appendBatch(of range: Range<Int>, nameLength: Int, size: Int) {
        do {
            var message = try Message(size: size)
            let written = message.withUnsafeMutableBytes { out in
                EnvelopeCodec.writeBatch(
                    frameCount: range.count, nameLength: nameLength,
                    frame: { offset, body in pending.withMessageBytes(at: range.lowerBound + offset) { body($0) } },
                    into: out)
            }
            assert(written == size, "a batch frame's size was miscounted")
            coalesced.append(message)
            pendingOffsets.append(pendingOffsets[pendingOffsets.count - 1] + range.count)
        } catch {
            record(error, "allocating a batch frame")
            for index in range {
                pending.moveMessage(at: index, to: &coalesced)
                pendingOffsets.append(pendingOffsets[pendingOffsets.count - 1] + 1)
            }
        }
    }

    /// The XPUB refused a frame (`publisherBackpressure` and a full subscriber). A publisher-only
    /// bus waits in a blocking send (`ZMQ_SNDTIMEO` 1 ms): libzmq reports an XPUB writable while
    /// the next send still fails, so polling would spin. A bus that also subscribes must keep
    /// reading, so it polls its other sockets for 1 ms instead.
    func waitForRoomToSend() {
        guard let publisher = sockets.publisher else { return }
        // Several brokers: each path is retried next round; a short poll keeps this from spinning.
        guard sockets.subscriber == nil && publisherPaths.paths.isEmpty else { return park(timeout: 1, includePublisher: false) }
        do {
            try publisher.set(.sendTimeout, .milliseconds(1))
            send(pending: publisher, mode: .blocking)
            try publisher.set(.sendTimeout, nil)
        } catch {
            record(error, "setting the send timeout")
        }
    }

    /// Reads subscription messages from the XPUB socket into the publisher's state machine.
    func readSubscriptions() -> Bool {
        var any = false
        for (path, publisher) in sockets.publishers.enumerated() {
            while true {
                let message: [UInt8]?
                do {
                    message = try publisher.receiveIfReady()
                } catch {
                    record(error, "reading subscriptions")
                    break
                }
                guard let message else { break }
                any = true
                perform(publisherSide.received(message, path: path, wallClock: Timestamps.wallClockNanoseconds()))
            }
        }
        if any { perform(publisherSide.endOfRead()) }
        return any
    }

    // MARK: Subscriber side

    /// A new subscription: a route for the receiver, its topics on the SUB socket.
    func addSubscription(_ storage: SubscriptionStorage) {
        guard sockets.subscriber != nil, !storage.isEnded else {
            // `Bus.subscribe` counted its prefix as wanted already; it never became a subscription.
            if sockets.loopback { core.changeInterest { $0.changeLocal(storage.pattern.subscriptionPrefix, subscribed: false) } }
            return
        }
        receiver.add(storage)
        stats.activeSubscriptions = receiver.subscriptionCount
        if !perform(topics.add(storage.pattern)) {
            // The SUB socket refused the subscription: end it now (the error is in `stats`)
            // rather than leave a subscription that never receives.
            if let failed = receiver.remove(id: storage.id) {
                perform(topics.remove(failed.pattern))
                failed.finishFromBus()
            }
            stats.activeSubscriptions = receiver.subscriptionCount
        }
    }


    /// Reads up to `batchLimit` frames, then hands each subscription its batch under one lock.
    func readNotifications() -> Bool {
        guard !sockets.subscribers.isEmpty else { return false }
        var count = 0
        for (path, subscriber) in sockets.subscribers.enumerated() {
            do {
                count += try receiver.read(from: subscriber, path: path, limit: Self.batchLimit)
            } catch {
                record(error, "reading notifications")
            }
        }
        if receiver.pathCount > 1 {
            // Several brokers: a path that went down can fill no hole; a wait that ended declares its gap.
            let now = Timestamps.monotonicNanoseconds()
            for change in sockets.subscriberPathChanges { receiver.setPath(change.path, connected: change.connected, now: now) }
            sockets.subscriberPathChanges.removeAll()
            receiver.settleMergedStreams(now: now)
        }
        if receiver.flush() { readingPaused = true }
        for token in receiver.readyTokens { perform(waiters.tokenEchoed(token)) }
        receiver.readyTokens.removeAll()
        for publisherID in receiver.endOfStreamAcknowledgements {
            // The publisher stays connected until every subscriber has processed its end of stream.
            perform(topics.acknowledgeEndOfStream(publisher: publisherID))
        }
        receiver.endOfStreamAcknowledgements.removeAll()
        return count > 0
    }

    /// A connecting socket (CURVE or plaintext): counts the failed handshakes its monitor reported.
    func readHandshakeFailures() -> Bool {
        let failures: [HandshakeFailure]
        let disconnections = sockets.publisherDisconnections
        do {
            failures = try sockets.readHandshakeFailures()
        } catch {
            record(error, "reading handshake events")
            return false
        }
        // The publisher lost a connection: the subscribers it took away are waited for at close.
        if sockets.publisherDisconnections != disconnections {
            publisherSide.connectionLost(wallClock: Timestamps.wallClockNanoseconds())
        }
        if log.enabled {
            log.handshakeFailures(failures, now: Timestamps.monotonicNanoseconds())
            for event in sockets.connectionEvents { log.connection(event) }
        }
        // A connection made or lost changes `stats.connectedEndpoints`: publish it this round.
        let connectionsChanged = !sockets.connectionEvents.isEmpty
        sockets.connectionEvents.removeAll()
        for failure in failures {
            if case .refused = failure { stats.handshakesRefused += 1 } else { stats.handshakesFailed += 1 }
            stats.lastHandshakeFailure = failure
            if failure == .mechanismMismatch { stats.handshakeMechanismMismatches += 1 }
        }
        if !failures.isEmpty && handshakesCannotSucceed { perform(waiters.handshakesCannotSucceed()) }
        return !failures.isEmpty || connectionsChanged
    }

    // MARK: Waits

    /// What a new wait is judged against, as this loop sees the bus now.
    func facts(for request: WaitRequest) -> WaitFacts {
        var facts = WaitFacts(
            isSubscriber: sockets.subscriber != nil, isPublisher: sockets.publisher != nil, loopback: sockets.loopback,
            handshakesCannotSucceed: handshakesCannotSucceed)
        switch request.kind {
        case .ready(_, let pattern):
            // Subscriptions queued before this wait (one mailbox, in order) are routes now; one of
            // them must be able to receive names `pattern` matches (their prefixes agree).
            let prefix = pattern.subscriptionPrefix
            facts.readyPatternCovered = receiver.routes.contains { route in
                route.prefix.count <= prefix.count ? prefix.starts(with: route.prefix) : route.prefix.starts(with: prefix)
            }
        case .subscribers(_, let name, _):
            facts.subscriberCount = publisherSide.subscriberCount(matching: name)
        case .exactSubscription(let name):
            facts.exactlySubscribed = publisherSide.isSubscribed(exactly: name)
        case .handshakeRefused:
            break
        }
        return facts
    }

    /// Whether a server refused this bus's key, or met it with another security mechanism (a
    /// plaintext client of a CURVE server, or the reverse): retrying changes neither. A mechanism
    /// mismatch often reads as a dropped connection (`EPIPE`: the server hung up before this side
    /// read why), and so does a wrong server key: `handshakeFailureLimit` failures in a row, none
    /// succeeding, settle it too (a broker restarting fails one or two at most).
    var handshakesCannotSucceed: Bool {
        stats.handshakesRefused > 0 || stats.handshakeMechanismMismatches > 0
            || sockets.handshakeFailuresInARow >= Self.handshakeFailureLimit
    }

    /// Failed handshakes in a row, none succeeding, after which waits give up (about 0.5 s at
    /// libzmq's 100 ms reconnect interval).
    static let handshakeFailureLimit = 5

    /// Publishes the counters for `Bus.stats` (one lock; after each round of work).
    func publishStats() {
        stats.posted = core.mailbox.withLock { $0.posted }
        let received = receiver.counters
        stats.framesReceived = received.framesReceived
        stats.notificationsReceived = received.notificationsReceived
        stats.unmatched = received.unmatched
        stats.unknownControlMessages = received.unknownControlMessages
        stats.lostUpstream = received.lostUpstream
        stats.endOfStreamRecords = received.endOfStreamRecords
        stats.malformedEndOfStreamRecords = received.malformedEndOfStreamRecords
        stats.connectedEndpoints = sockets.connectedEndpointCount
        stats.streamsForgotten = received.streamsForgotten
        stats.duplicatesDiscarded = received.duplicatesDiscarded
        stats.trackedStreams = receiver.trackedStreams
        stats.rejected = received.rejected
        stats.rejectedBatchNotifications = received.rejectedBatchNotifications
        if log.enabled { log.rejections(received.rejected, now: Timestamps.monotonicNanoseconds()) }
        if let authentication = sockets.authentication {
            stats.clientAuthentication = authentication.counts.values.reduce(AuthenticationCounts(), +)
        }
        let snapshot = stats
        core.statsSnapshot.withLock { $0 = snapshot }
    }
}
