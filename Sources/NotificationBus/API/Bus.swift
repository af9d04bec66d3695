#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import ZeroMQ

/// A cross-process `NotificationCenter` carried by ZeroMQ.
///
/// `post` stamps each notification (publisher id, sequence per (publisher, name), time) and hands
/// it to the bus's event loop (`BusEventLoop`); `notifications(named:)`, `events(named:)` and `addObserver` consume
/// the names matching a pattern. One dedicated thread owns every socket; nothing here blocks the
/// caller on a socket. Close with `await close()`; dropping the last reference closes it too.
public final class Bus: Sendable {
    /// The configuration the bus was opened with.
    public let configuration: BusConfiguration
    /// The tracer of `configuration.tracing`, nil when there is none that records: then no
    /// tracing work at all (issue 40).
    @usableFromInline let tracer: BusTracer?
    /// The endpoints attached, with the real port for `tcp://...:*` binds, publisher side first.
    public let endpoints: [String]
    @usableFromInline let core: BusCore
    /// Subscriptions waiting for their retained values, for `ready(_:)`.
    let retainedSubscriptions = RetainedSubscriptions()
    /// `configuration.deliversToItself`, computed once: a typed post asks it every time (computed,
    /// it builds a set of endpoints, which showed in the typed path's profile).
    @usableFromInline let deliversToItself: Bool
    /// The bus's own I/O thread as a task executor: `Task(executorPreference: bus.executor) { ... }`
    /// posts and consumes there without hand-offs to other threads (see `BusExecutor`).
    public let executor: BusExecutor
    /// The tcp and ipc endpoints this bus connects to, each once (what a full
    /// `BusStats.connectedEndpoints` counts).
    @usableFromInline let connectingEndpoints: Int
    /// The event loop's thread: joined by the first `close()`, detached if the bus is dropped
    /// (the loop then closes it by itself). A resource, not a state: the state is `BusLifecycle`.
    private let thread: Mutex<pthread_t?>

    /// With CURVE the id carries the key (NBP-1 §15.3), so that a broker can refuse another
    /// key's frames in its name even after a restart. The key was checked by `validate()`: a
    /// `try?` that fails leaves the id as it is.
    private static func tagged(_ configuration: BusConfiguration) -> BusConfiguration {
        guard let curve = configuration.curve, let key = try? Z85.decode(curve.keyPair.publicKey),
            let tag = PublisherKeyTag.tag(ofPublicKey: key)
        else { return configuration }
        var configuration = configuration
        configuration.publisherID = PublisherKeyTag.id(configuration.publisherID, taggedWith: tag)
        return configuration
    }

    /// Opens the bus: creates, binds and connects the sockets on the caller's thread, then starts
    /// the event loop's thread, which owns them from then on. Returns at once: nothing here waits
    /// for another thread, so it is safe on a cooperative thread (from async code). Throws
    /// `.invalidConfiguration` for a value out of range, `.transport` when an endpoint cannot be
    /// used (in use, malformed), `.security` for CURVE settings that cannot apply.
    public init(_ configuration: BusConfiguration = .embedded()) throws(BusError) {
        try configuration.validate()
        let configuration = Self.tagged(configuration)
        self.configuration = configuration
        tracer = BusTracer.resolve(configuration.tracing)
        deliversToItself = configuration.deliversToItself
        connectingEndpoints = Set(
            (configuration.publish + configuration.subscribe).compactMap { attachment -> String? in
                guard case .connect(let endpoint) = attachment, !endpoint.hasPrefix("inproc://") else { return nil }
                return endpoint
            }
        ).count
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            throw .transport(error)
        }
        let sockets = try BusSockets(configuration)
        endpoints = sockets.resolvedEndpoints
        // Posting threads send themselves while the loop sleeps, except looped back: local
        // subscriptions get their posts from the loop.
        // Not with several brokers: the loop sends every post to each of them (NBP-1 §17).
        // Its sends' wire bytes count for a binding publisher's budget: CURVE's are the server's then.
        let direct =
            sockets.loopback || sockets.publishers.count != 1
            ? nil : sockets.publisher.map { DirectPublisher($0, curve: configuration.curveServer != nil) }
        let core = BusCore(
            wake: wake, outboundCapacity: max(1, configuration.outboundCapacity),
            idleSpinNanoseconds: configuration.idleSpinInNanoseconds, directPublisher: direct,
            // A publisher that binds (one XPUB, not looped back) keeps its own retained values.
            keepsOwnRetained: !sockets.loopback && sockets.publishers.count == 1 && configuration.publish.contains(where: \.isBind),
            retainedNames: configuration.retainedNames, retainedBytes: configuration.retainedBytes,
            ownMessageBytes: OutboundPosts.ownMessageThreshold,
            batchBytes: configuration.batching.maximumFrameBytes)
        self.core = core
        let executor = BusExecutor(core: core)
        self.executor = executor
        let handoff = ThreadHandoff(value: sockets)
        do {
            let handle = try spawnThread(named: "nbus-io") {
                BusEventLoop(core: core, configuration: configuration, executor: executor, sockets: handoff.value).run()
            }
            thread = Mutex(handle)
        } catch {
            // The thread never started: the sockets are still this thread's to close.
            sockets.close()
            sockets.context.terminate()
            throw error
        }
    }

    deinit {
        core.requestClose()
        if let handle = thread.withLock({ $0.take() }) { pthread_detach(handle) }
    }

    /// This bus's NBP/1 publisher id.
    public var publisherID: UInt64 { configuration.publisherID }

    /// The bus's counters now (refreshed by the I/O thread after each round of work).
    public var stats: BusStats {
        var stats = core.statsSnapshot.withLock { $0 }
        // Posts that posting threads sent themselves are counted as they go, not by the loop.
        let direct = core.mailbox.withLock { (sent: $0.lending.sent, unsent: $0.lending.unsent, posted: $0.posted) }
        stats.sent += direct.sent
        stats.framesSent += direct.sent  // one post, one frame
        stats.unsent += direct.unsent
        stats.posted = max(stats.posted, direct.posted)
        let unwanted = core.unwantedPosts
        stats.unwanted = unwanted.all
        stats.unwantedAfterSending = unwanted.afterSending
        stats.unwantedWhileDisconnected = unwanted.whileDisconnected
        stats.posted &+= stats.unwanted
        stats.messagesEncoded = core.messageCoding.encoded.load(ordering: .relaxed)
        stats.messagesDecoded = core.messageCoding.decoded.load(ordering: .relaxed)
        // A binding publisher's own retained values are kept by posting threads; an embedded
        // bus's by the loop (already in the snapshot).
        stats.ownRetainedEvictions &+= core.ownRetainedEvictions.load(ordering: .relaxed)
        stats.ownRetainedExpirations &+= core.ownRetainedExpirations.load(ordering: .relaxed)
        return stats
    }

    // MARK: Posting

    /// Posts a notification; suspends (never blocks the thread) while the outbound queue is full.
    ///
    /// Assigns the per-(publisher, name) sequence number and the publish time. Throws for a payload
    /// over `maximumPayload`, headers beyond NBP/1's limits, or a closed bus. Runs on the caller's
    /// executor (`nonisolated(nonsending)`): a main-actor caller stays there, with no hop per post.
    @inlinable
    public nonisolated(nonsending) func post(
        name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified
    ) async throws(BusError) {
        // Traced: in a producer span, its context in the headers (one nil check otherwise).
        if tracer != nil { return try await tracedPost(name, payload, headers, contentType) }
        // Inlinable: when the outbound queue has room (the common case) a post is synchronous
        // work in the caller's own frame, with no async call of its own (its frame allocation
        // and executor checks showed in the publisher's profile).
        // Usually encoded straight into the outbound queue (nil then); a message of its own only
        // when it may be sent directly or must wait for room.
        var message: Message? = try encodeOrQueue(name, payload, headers, contentType)
        if message == nil { return }  // queued, or no subscriber wants it (counted in `stats.unwanted`)
        if try queue(&message, name) { return }
        try await queueWhenThereIsSpace(&message, name)
    }

    /// `post` with a tracer: in `send <name>`, whose context goes in the headers.
    @usableFromInline
    nonisolated(nonsending) func tracedPost(
        _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ contentType: ContentType
    ) async throws(BusError) {
        var headers = headers
        let span = tracer?.startSend(name, payloadCount: payload.count, headers: &headers)
        defer { span?.end() }
        do throws(BusError) {
            var message: Message? = try encodeOrQueue(name, payload, headers, contentType)
            if message == nil { return }
            if try queue(&message, name) { return }
            try await queueWhenThereIsSpace(&message, name)
        } catch {
            span?.recordError(error)
            throw error
        }
    }

    /// Queues an encoded post; false (message kept) when the outbound queue is full.
    @usableFromInline
    func queue(
        _ message: inout Message?, _ name: NotificationName, localValue: (any AnyObject & Sendable)? = nil
    ) throws(BusError) -> Bool {
        switch core.queue(message: &message, name: name, localValue: localValue) {
        case .queued: return true
        case .closed: throw .closed
        case .full: return false
        }
    }

    /// `post`'s slow path: suspends until the outbound queue has room, then queues.
    @usableFromInline
    nonisolated(nonsending) func queueWhenThereIsSpace(
        _ message: inout Message?, _ name: NotificationName, localValue: (any AnyObject & Sendable)? = nil
    ) async throws(BusError) {
        while true {
            await core.waitForSpace()
            if Task.isCancelled { throw .cancelled }
            if try queue(&message, name, localValue: localValue) { return }
        }
    }

    /// `post` with the name as text (validated; throws `.invalidName`).
    public nonisolated(nonsending) func post(
        name: String, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified
    ) async throws(BusError) {
        try await post(name: try validName(name), payload: payload, headers: headers, contentType: contentType)
    }

    /// Posts without waiting, from synchronous code: throws `.outboundQueueFull` rather than wait.
    public func postNow(
        name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified
    ) throws(BusError) {
        var headers = headers
        let span = tracer?.startSend(name, payloadCount: payload.count, headers: &headers)
        defer { span?.end() }
        var message: Message? = try encodeOrQueue(name, payload, headers, contentType)
        if message == nil { return }  // queued, or no subscriber wants it (counted in `stats.unwanted`)
        switch core.queue(message: &message, name: name) {
        case .queued: return
        case .closed: throw .closed
        case .full: throw .outboundQueueFull(capacity: core.outboundCapacity)
        }
    }

    /// Validates a post and encodes it into a libzmq message, stamped with the time now and
    /// sequence 0 (`BusCore.queue` writes the real one as it queues).
    @usableFromInline
    func encodeForPost(
        _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ contentType: ContentType
    ) throws(BusError) -> Message? {
        try checkPostable(name)
        let size = try encodedSize(name, payload, headers)
        // Filtering before encoding: a post that no subscription at this publisher covers would
        // be dropped by ZeroMQ's prefix filter; it stops here, before any copy or hand-off.
        guard try isWanted(name) else { return nil }
        return try frame(size: size, name, payload, headers, contentType)
    }

    /// Validates a post and, unless the loop may have lent the XPUB (a direct send needs a
    /// message of its own) or it is large (`OutboundPosts.ownMessageThreshold`: it goes as its
    /// own message anyway, and is then encoded outside the mailbox's lock and never copied
    /// again), encodes it straight into the outbound queue with its sequence number: nil then,
    /// and nil when no subscriber wants it. Otherwise (the queue is full, it may go directly, or
    /// it is large) returns it encoded into a libzmq message, as `encodeForPost`.
    @usableFromInline
    func encodeOrQueue(
        _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ contentType: ContentType
    ) throws(BusError) -> Message? {
        try checkPostable(name)
        let size = try encodedSize(name, payload, headers)
        guard try isWanted(name) else { return nil }
        return try queueOrFrame(size: size, name, payload, headers, contentType)
    }

    /// The end of every post that may be written straight into the outbound queue (the byte
    /// API's `encodeOrQueue`, the looped-back typed `queueLocally`): unless the loop may have
    /// lent the XPUB or the post is large (`OutboundPosts.ownMessageThreshold`), it is encoded
    /// into the queue with its sequence number, `localValue` beside it, and nil returned;
    /// otherwise, and when the queue is full, it is returned encoded into a message of its own,
    /// which the caller queues (with the value) when there is room. `size`: its encoded size.
    @inline(__always)
    func queueOrFrame(
        size: Int, _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders,
        _ contentType: ContentType, localValue: LocalMessageValue? = nil
    ) throws(BusError) -> Message? {
        if size < core.ownMessageBytes, !core.mayLendPublisher {
            let timestamp = Timestamps.wallClockNanoseconds()
            let publisherID = configuration.publisherID
            // With batching on, written as a batch record (`BusCore.queue`): the frame made as the
            // posts come, sent by the loop as it is. Flags 0: never retained.
            let recordSize = EnvelopeCodec.batchedRecordSize(ofFrameCount: size, nameLength: name.rawValue.utf8.count)
            let outcome = core.queue(
                size: size, name: name, localValue: localValue, record: (recordSize, publisherID),
                encodeRecord: { sequence, out in
                    EnvelopeCodec.writeBatchRecord(
                        flags: 0, contentType: contentType, headers: headers, payload: payload, sequence: sequence,
                        timestamp: timestamp, into: out)
                }
            ) { sequence, out in
                let written = EnvelopeCodec.write(
                    name: name, flags: 0, contentType: contentType, headers: headers, payload: payload,
                    sequence: sequence, publisherID: publisherID, timestamp: timestamp, into: out)
                assert(written == size, "a post's size was miscounted")
            }
            switch outcome {
            case .queued: return nil
            case .closed: throw .closed
            case .full: break  // waits for room with a message of its own
            }
        }
        return try frame(size: size, name, payload, headers, contentType)
    }

    /// The checks every post passes first (the byte API's and the typed one's).
    @inline(__always)
    func checkPostable(_ name: NotificationName) throws(BusError) {
        guard !configuration.publish.isEmpty else { throw .notAPublisher }
        guard !ControlNames.isReserved(name) else { throw .reservedName(name) }
    }

    /// The frame's size for this payload and headers, within the bus's limits.
    @inline(__always)
    func encodedSize(_ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders) throws(BusError) -> Int {
        guard payload.count <= configuration.maximumPayload else {
            throw .payloadTooLarge(byteCount: payload.count, maximum: configuration.maximumPayload)
        }
        do {
            return try EnvelopeCodec.encodedSize(name: name, headers: headers, payloadCount: payload.count)
        } catch {
            throw .invalidHeaders(error)
        }
    }

    /// Whether a subscription at this publisher covers `name`; an unwanted post is counted here
    /// (and skips a sequence number once the name was sent, so subscribers see no false gap).
    @inline(__always)
    func isWanted(_ name: NotificationName) throws(BusError) -> Bool {
        switch core.decideInterest(name) {
        case nil: throw .closed
        case .unwanted?: return false
        case .unwantedAfterSending?:
            core.skipSequence(of: name)
            core.noteUnwantedAfterSending(connecting: connectingEndpoints)
            return false
        case .wanted?: return true
        }
    }

    /// The post encoded straight into a libzmq message, so the I/O thread sends it without
    /// another copy. The sequence is 0 here; `BusCore.queue` stamps it in the same critical
    /// section as queueing.
    @inline(__always)
    func frame(
        size: Int, _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ contentType: ContentType
    ) throws(BusError) -> Message {
        var message: Message
        do {
            message = try Message(size: size)
        } catch {
            throw .transport(error)
        }
        let timestamp = Timestamps.wallClockNanoseconds()
        let publisherID = configuration.publisherID
        message.withUnsafeMutableBytes { out in
            _ = EnvelopeCodec.write(
                name: name, flags: 0, contentType: contentType, headers: headers, payload: payload, sequence: 0,
                publisherID: publisherID, timestamp: timestamp, into: out)
        }
        return message
    }

    // MARK: Subscribing

    /// Subscribes to the names matching `pattern`, as an `AsyncSequence` of notifications.
    ///
    /// The subscription is registered when this returns and live at a publisher once
    /// `await ready(pattern)` returns. Loss is counted in the sequence's `stats`; use
    /// `events(named:)` to see it in-band.
    public func notifications(
        named pattern: NamePattern, buffering: BufferingPolicy = .default
    ) throws(BusError) -> NotificationSequence {
        NotificationSequence(events: BusEventSequence(handle: try subscribe(pattern, buffering)))
    }

    /// `notifications(named:)` with the pattern as text.
    public func notifications(
        named pattern: String, buffering: BufferingPolicy = .default
    ) throws(BusError) -> NotificationSequence {
        try notifications(named: try validPattern(pattern), buffering: buffering)
    }

    /// Subscribes to `pattern` as a stream of `.notification` and `.gap` events, so a
    /// `for await` loop sees every loss where it happened.
    public func events(named pattern: NamePattern, buffering: BufferingPolicy = .default) throws(BusError)
        -> BusEventSequence
    {
        BusEventSequence(handle: try subscribe(pattern, buffering))
    }

    /// `events(named:)` with the pattern as text.
    public func events(named pattern: String, buffering: BufferingPolicy = .default) throws(BusError)
        -> BusEventSequence
    {
        try events(named: try validPattern(pattern), buffering: buffering)
    }

    /// Calls `block` for every notification matching `pattern`, on `block`'s own isolation
    /// (`{ @MainActor n in ... }` runs on the main actor), until the token is cancelled or dropped.
    public func addObserver(
        forName pattern: NamePattern, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (BusNotification) async -> Void
    ) throws(BusError) -> ObservationToken {
        observe(try subscribe(pattern, buffering), block)
    }

    /// One task per observer: it takes each notification and awaits `block`, in a
    /// `process <name>` span when the bus has a tracer (the loop itself then makes none).
    func observe(
        _ handle: SubscriptionHandle, _ block: @escaping @isolated(any) @Sendable (BusNotification) async -> Void
    ) -> ObservationToken {
        let sequence = NotificationSequence(events: BusEventSequence(handle: handle, traced: false))
        let task: Task<Void, Never>
        if let tracer {
            task = Task {
                for await notification in sequence { await tracer.process(notification) { await block(notification) } }
            }
        } else {
            task = Task {
                for await notification in sequence { await block(notification) }
            }
        }
        return ObservationToken(task: task, sequence: sequence)
    }

    /// `addObserver(forName:)` with the pattern as text.
    public func addObserver(
        forName pattern: String, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (BusNotification) async -> Void
    ) throws(BusError) -> ObservationToken {
        try addObserver(forName: try validPattern(pattern), buffering: buffering, using: block)
    }

    /// Delivers `pattern`'s events to `sink` on the bus's I/O thread as they arrive (no buffer, no
    /// task in between), until the returned subscription is cancelled or dropped. Live at a
    /// publisher once `await ready(pattern)` returns, as for `notifications(named:)`.
    public func subscribe(_ pattern: NamePattern, sink: any BusEventSink) throws(BusError) -> SinkSubscription {
        SinkSubscription(handle: try subscribe(pattern, .default, sink: sink))
    }

    func subscribe(
        _ pattern: NamePattern, _ buffering: BufferingPolicy, sink: (any BusEventSink)? = nil, retained: Bool = false,
        endsAfterRetained: Bool = false, takesLocalValues: Bool = false
    ) throws(BusError) -> SubscriptionHandle {
        guard !configuration.subscribe.isEmpty else { throw .notASubscriber }
        let storage = SubscriptionStorage(
            id: core.makeID(), pattern: pattern, policy: buffering, byteLimit: configuration.subscriptionBufferBytes,
            core: core, sink: sink, retained: retained,
            endsAfterRetained: endsAfterRetained, takesLocalValues: takesLocalValues)
        if let delivery = storage.retained { retainedSubscriptions.add(pattern: pattern, delivery) }
        if configuration.deliversToItself {
            // Before the subscription is queued: a post made right after this call must not be
            // skipped as unwanted (the I/O thread removes it with the subscription).
            core.changeInterest { $0.changeLocal(pattern.subscriptionPrefix, subscribed: true) }
        }
        guard core.enqueue(.addSubscription(storage)) else { throw .closed }
        return SubscriptionHandle(storage: storage, tracer: tracer)
    }

    // MARK: Readiness

    /// Returns once this bus's subscriptions made before the call (to `pattern`, or to patterns
    /// within or around it, like `orders.created` for `orders.>`) are live at a publisher (one that
    /// answers: any NotificationBus publisher does), so nothing is lost to the slow joiner. Throws
    /// `.notSubscribed` when no subscription can receive a name `pattern` matches.
    ///
    /// How: a unique token (`_nbus.ready.<bus>.<n>`) is subscribed on the same socket after every
    /// earlier subscription; a publisher that sees it has applied them all, and echoes it back.
    ///
    /// A subscription that asked for retained values (`notifications(named:buffering:retained:)`)
    /// is ready once they were handed to it; when the broker that sent them takes every
    /// publisher's notifications (it keeps retained values), that is enough, with no publisher
    /// running at all.
    public func ready(_ pattern: NamePattern, timeout: Duration = .seconds(10)) async throws(BusError) {
        if try await retainedDelivered(pattern, timeout: timeout) { return }
        let token: NotificationName
        do {
            token = try NotificationName(ControlNames.readyName(bus: publisherID, token: core.makeID()))
        } catch {
            throw .invalidName(error)
        }
        try await wait(.ready(token: token, pattern: pattern), what: "a publisher to confirm \(pattern)", timeout: timeout)
    }

    /// Returns once at least `count` subscribers for `name` have reached this publisher (XPUB sees
    /// their subscriptions). NotificationBus subscribers are counted one by one; foreign ones only
    /// show as "at least one".
    public func waitForSubscribers(
        count: Int = 1, matching name: NotificationName, timeout: Duration = .seconds(10)
    ) async throws(BusError) {
        try await wait(
            .subscribers(count: count, name: name, atMost: false), what: "\(count) subscriber(s) of \(name)",
            timeout: timeout)
    }

    /// Returns once at least `count` subscribers for `name` have reached this publisher through any
    /// broker: with several, one still joining counts too (`waitForSubscribers` waits for it to
    /// come through every broker, or 1 s). Request/reply asks this: is anyone there now.
    func waitForSubscribersOnAnyPath(count: Int = 1, matching name: NotificationName, timeout: Duration) async throws(BusError) {
        try await wait(
            .subscribers(count: count, name: name, atMost: false, joinedOnly: false), what: "\(count) subscriber(s) of \(name)",
            timeout: timeout)
    }

    /// Returns once this publisher has seen a subscription to exactly `name` (not merely one that
    /// covers it, like `>`): request/reply uses it to learn that a subscription of its own came
    /// back through the broker.
    func waitForExactSubscription(of name: NotificationName, timeout: Duration) async throws(BusError) {
        try await wait(.exactSubscription(name: name), what: "a subscription to \(name) at this publisher", timeout: timeout)
    }

    /// Returns once no subscriber for `name` remains at this publisher (their unsubscriptions arrived).
    public func waitForNoSubscribers(matching name: NotificationName, timeout: Duration = .seconds(10))
        async throws(BusError)
    {
        try await wait(
            .subscribers(count: 0, name: name, atMost: true), what: "the last subscriber of \(name) to leave",
            timeout: timeout)
    }

    /// Returns once a server has refused this bus's connection (at once if one already has): a
    /// CURVE server's ZAP handler did not admit `configuration.curve`'s public key, or the server
    /// uses another security mechanism (CURVE against this plaintext bus, or the reverse), or five
    /// handshakes in a row failed with none succeeding (a server of the other mechanism, or a wrong
    /// server key, often just hangs up). A refused client keeps retrying, in vain while nothing
    /// changes on either side, so this is the moment to say so.
    public func waitForHandshakeRefusal(timeout: Duration = .seconds(10)) async throws(BusError) {
        try await wait(.handshakeRefused, what: "a server to refuse this bus's connection", timeout: timeout)
    }

    private func wait(_ kind: WaitRequest.Kind, what: String, timeout: Duration) async throws(BusError) {
        let id = core.makeID()
        if Task.isCancelled { throw .cancelled }
        let milliseconds = Timestamps.boundedMilliseconds(timeout)
        let request = WaitRequest(
            id: id, kind: kind, deadline: Timestamps.monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000,
            what: what, timeoutMilliseconds: milliseconds)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, BusError>, Never>) in
                if !core.enqueue(.addWaiter(request, continuation)) { continuation.resume(returning: .failure(.closed)) }
                // Cancelled just before: `onCancel` ran first, and its command found no waiter yet.
                if Task.isCancelled { core.enqueue(.cancelWaiter(id)) }
            }
        } onCancel: {
            core.enqueue(.cancelWaiter(id))
        }
        try result.get()
    }

    // MARK: Closing

    /// Closes the bus: hands queued posts to ZeroMQ (within `closeTimeout`), ends every
    /// subscription after its buffer drains, stops the I/O thread and frees every socket and fd.
    /// Returns the final counters; `unsent` says what could not be sent.
    @discardableResult
    public func close() async -> BusStats {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.requestClose(waiter: continuation)
        }
        if let handle = thread.withLock({ $0.take() }) { pthread_join(handle, nil) }
        return stats
    }

    private func validName(_ text: String) throws(BusError) -> NotificationName {
        do { return try NotificationName(text) } catch { throw .invalidName(error) }
    }

    private func validPattern(_ text: String) throws(BusError) -> NamePattern {
        do { return try NamePattern(text) } catch { throw .invalidName(error) }
    }
}

/// An observer registered with `Bus.addObserver`; it removes itself on `cancel()` or when dropped.
public final class ObservationToken: Sendable {
    private let task: Task<Void, Never>
    let sequence: NotificationSequence

    init(task: Task<Void, Never>, sequence: NotificationSequence) {
        self.task = task
        self.sequence = sequence
    }

    /// The observer's subscription counters.
    public var stats: SubscriptionStats { sequence.stats }

    /// Stops the observer and unsubscribes.
    public func cancel() {
        sequence.cancel()
        task.cancel()
    }

    deinit {
        cancel()
    }
}
