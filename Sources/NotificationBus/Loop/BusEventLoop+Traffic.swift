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
            posts.dropAll()
            return false
        }
        if posts.hasSeveralPaths { return sendToPaths() }
        guard sockets.loopback else {
            return budgetSide != nil ? sendKeepingBudget(on: publisher) : send(on: publisher, mode: .dontWait) > 0
        }
        var progressed = false
        while true {
            // Route the next run of posts to local subscriptions, unless a full one holds them back.
            if !receiver.readingPaused && posts.deliverLocally(atMost: Self.batchLimit, to: &receiver) {
                receiver.flush()
                progressed = true
            }
            // Then hand the routed ones to ZeroMQ, for subscribers elsewhere.
            if send(on: publisher, mode: .dontWait) > 0 { progressed = true }
            if !posts.sentWhatWasDeliveredLocally || receiver.readingPaused || posts.deliveredLocally { break }
        }
        return progressed
    }

    /// Sends the posts in order until ZeroMQ refuses one (it stays queued), or, with a kept
    /// budget, until the bytes sent could put a subscriber past it (`budgetAllowance`: the next
    /// round looks first); returns how many frames went. A frame ZeroMQ rejects outright is
    /// recorded and counted unsent.
    @discardableResult
    func send(on publisher: Socket, mode: BlockingMode) -> Int {
        posts.send(
            on: publisher, mode: mode, maximumWireBytes: budgetAllowance, stopped: { contextTerminated },
            failed: { record($0, "sending a notification") })
    }

    /// The XPUB refused a frame (`publisherBackpressure` and a full subscriber). A publisher-only
    /// bus waits in a blocking send (`ZMQ_SNDTIMEO` 1 ms): libzmq reports an XPUB writable while
    /// the next send still fails, so polling would spin. A bus that also subscribes must keep
    /// reading, so it polls its other sockets for 1 ms instead.
    func waitForRoomToSend() {
        guard let publisher = sockets.publisher else { return }
        // Several brokers: each path is retried next round; a short poll keeps this from spinning.
        guard sockets.subscriber == nil && !posts.hasSeveralPaths else { return park(timeout: 1, includePublisher: false) }
        do {
            try publisher.set(.sendTimeout, .milliseconds(1))
            if send(on: publisher, mode: .blocking) > 0 { framesAccepted() }
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
                // A request for this binding publisher's retained values is answered, not a prefix.
                if answerRetainedRequest(message, on: publisher) { continue }
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
        if !perform(topics.add(storage.pattern)) {
            // The SUB socket refused the subscription: end it now (the error is in `stats`)
            // rather than leave a subscription that never receives.
            if let failed = receiver.remove(id: storage.id) {
                perform(topics.remove(failed.pattern))
                failed.finishFromBus()
            }
            return
        }
        if storage.retained != nil { requestRetained(for: storage) }
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
            applyPathChanges()
            if receiver.startAwaitsPathReading {
                // A new stream's start waits on a path that seems down: read the monitors now,
                // after this round's reads, so a path really down costs it no wait.
                _ = readHandshakeFailures()
                applyPathChanges()
            }
        }
        receiver.flush()
        endSnapshots()
        for token in receiver.takeReadyTokens() { perform(waiters.tokenEchoed(token)) }
        for publisherID in receiver.takeEndOfStreamAcknowledgements() {
            // The publisher stays connected until every subscriber has processed its end of stream.
            perform(topics.acknowledgeEndOfStream(publisher: publisherID))
        }
        return count > 0
    }

    /// Several brokers: what the monitors said since the last call goes to the receiver (a path
    /// that went down can fill no hole; a stream's start may now settle); a wait that ended
    /// declares its gap.
    private func applyPathChanges() {
        let now = Timestamps.monotonicNanoseconds()
        for change in sockets.subscriberPathChanges { receiver.setPath(change.path, connected: change.connected, now: now) }
        sockets.subscriberPathChanges.removeAll()
        receiver.pathsRead(at: sockets.subscriberPathsReadAt, now: now)
        receiver.settleMergedStreams(now: now)
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
        let renewed = renewRetainedSnapshots()
        // A connection made or lost changes `stats.connectedEndpoints`: publish it this round.
        let connectionsChanged = !sockets.connectionEvents.isEmpty
        sockets.connectionEvents.removeAll()
        for failure in failures {
            if case .refused = failure { stats.handshakesRefused += 1 } else { stats.handshakesFailed += 1 }
            stats.lastHandshakeFailure = failure
            if failure == .mechanismMismatch { stats.handshakeMechanismMismatches += 1 }
        }
        if !failures.isEmpty && handshakesCannotSucceed { perform(waiters.handshakesCannotSucceed()) }
        return !failures.isEmpty || connectionsChanged || renewed
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
        case .subscribers(_, let name, let atMost, let joinedOnly):
            facts.subscriberCount = publisherSide.subscriberCount(matching: name, joinedOnly: !atMost && joinedOnly)
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

    /// The first of this bus's own retained values evicted (`BusStats.ownRetainedEvictions`) is
    /// logged as a warning, once: the bound is too small for the names posted. One atomic load
    /// a round until then.
    private func warnOfFirstOwnRetainedEviction() {
        guard !ownRetainedEvictionWarned else { return }
        var name = receiver.firstLocalRetainedEviction
        if name == nil, core.keepsOwnRetained, core.ownRetainedEvictions.load(ordering: .relaxed) > 0 {
            name = core.firstOwnRetainedEviction.withLock { $0 }
        }
        guard let name else { return }
        ownRetainedEvictionWarned = true
        configuration.logger?.warning(
            "evicted a retained value (\(name)) to stay within retainedNames \(configuration.retainedNames) and retainedBytes \(configuration.retainedBytes); later evictions are counted in ownRetainedEvictions, not logged",
            metadata: ["side": "publisher"])
    }

    /// Publishes the counters for `Bus.stats` (one lock; after each round of work).
    func publishStats() {
        stats.posted = core.mailbox.withLock { $0.posted }
        stats.activeSubscriptions = receiver.subscriptionCount
        let sent = posts.counters
        stats.sent = sent.sent
        stats.framesSent = sent.framesSent
        stats.unsent = sent.unsent
        stats.pathDrops = sent.pathDrops
        stats.pathsParked = sent.pathsParked
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
        // One path tracks streams in the receiver; several merge them (MergedStreams counts).
        stats.streamsJoinedLate = received.streamsJoinedLate &+ receiver.merged.streamsJoinedLate
        let (before, overflow) = received.notificationsBeforeJoining.addingReportingOverflow(receiver.merged.notificationsBeforeJoining)
        stats.notificationsBeforeJoining = overflow ? .max : before
        stats.duplicatesDiscarded = received.duplicatesDiscarded
        stats.retainedReceived = received.retainedReceived
        stats.retainedSuperseded = received.retainedSuperseded
        stats.retainedRenewals = received.retainedRenewals
        stats.retainedRepeats = received.retainedRepeats
        stats.ownRetainedEvictions = receiver.localRetainedEvictions
        stats.ownRetainedExpirations = receiver.localRetainedExpirations
        warnOfFirstOwnRetainedEviction()
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
