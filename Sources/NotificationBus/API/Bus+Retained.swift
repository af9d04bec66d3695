import Synchronization
import ZeroMQ

/// Retained values (NBP-1 §18): posting a name's current value, and subscriptions that start
/// with the current values of the names they match.
extension Bus {
    /// Posts a notification and, with `retain`, asks brokers that keep retained values to keep it
    /// as the name's current value: a subscription made later with `retained: true` gets it
    /// first, marked (`BusNotification.isRetained`). An empty payload clears the name's value
    /// (MQTT's rule; `clearRetained(name:)` says so by name). Subscribers now receive it like any
    /// post. `retainFor` bounds how long it is kept (the `retain-for` header, whole milliseconds,
    /// counted from when a broker takes it; nil: until replaced, cleared or evicted).
    public nonisolated(nonsending) func post(
        name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified, retain: Bool, retainFor: Duration? = nil
    ) async throws(BusError) {
        guard retain else {
            return try await post(name: name, payload: payload, headers: headers, contentType: contentType)
        }
        var message = try retainedFrame(name, payload, headers, contentType, retainFor: retainFor)
        if message == nil { return }  // no subscriber and no retaining broker or keeper
        if try queue(&message, name) { return }
        try await queueWhenThereIsSpace(&message, name)
    }

    /// A retained post's frame, its retain bit set (`retainFor` as its `retain-for` header); nil
    /// when nothing wants it (no subscriber and no retaining broker or keeper). Shared by
    /// `post(name:...:retain:)` and the typed posts of a type that declares itself retained.
    func retainedFrame(
        _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ contentType: ContentType,
        retainFor: Duration?
    ) throws(BusError) -> Message? {
        var headers = headers
        if let retainFor {
            let milliseconds = Timestamps.boundedMilliseconds(retainFor)
            guard milliseconds >= 1 else {
                throw .invalidConfiguration("retainFor must be at least 1 millisecond, not \(retainFor)")
            }
            headers[WireFormat.retainForHeader] = String(milliseconds)
        }
        let span = tracer?.startSend(name, payloadCount: payload.count, headers: &headers)
        defer { span?.end() }
        var message: Message?
        if configuration.deliversToItself || core.keepsOwnRetained {
            // An embedded bus and a binding publisher keep their own values: a post no
            // subscription wants yet is still encoded and queued, so it is kept (ZeroMQ filters
            // it for everyone else).
            try checkPostable(name)
            message = try frame(size: try encodedSize(name, payload, headers), name, payload, headers, contentType)
        } else {
            message = try encodeForPost(name, payload, headers, contentType)
        }
        guard var encoded = message.take() else { return nil }
        let flagOffset = name.rawValue.utf8.count + 1 + WireFormat.FixedHeaderOffset.flags
        encoded.withUnsafeMutableBytes { $0[flagOffset] |= WireFormat.Flag.retain }
        return consume encoded
    }

    /// `post(name:...:retain:)` with the name as text.
    public nonisolated(nonsending) func post(
        name: String, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified, retain: Bool, retainFor: Duration? = nil
    ) async throws(BusError) {
        let valid: NotificationName
        do {
            valid = try NotificationName(name)
        } catch {
            throw .invalidName(error)
        }
        try await post(
            name: valid, payload: payload, headers: headers, contentType: contentType, retain: retain, retainFor: retainFor)
    }

    /// Removes `name`'s retained value at the brokers that keep it (a retained post with an
    /// empty payload; subscribers now receive that empty notification).
    ///
    /// Order: on an embedded bus and a publisher that binds (they keep their own values), a
    /// subscription made with `retained: true` after this returns never gets the value cleared
    /// (the one exception: an embedded bus whose `suspendProducer` subscription is full holds
    /// its own posts back; one made then may get the old value, then the clear). Through a
    /// broker the clear and the subscription's request travel on different connections: one made
    /// right after may get the old value first, then the clear itself, live.
    public nonisolated(nonsending) func clearRetained(name: NotificationName) async throws(BusError) {
        try await post(name: name, payload: [], retain: true)
    }

    /// `notifications(named:buffering:)` that starts with the current (retained) value of every
    /// name `pattern` matches, each marked `isRetained`, before that name's live notifications;
    /// at most one per name and publisher. Through a broker that keeps retained values
    /// (`BrokerConfiguration.retainedNames`); `ready(pattern)` returns once they were handed over.
    /// An embedded bus and a publisher that binds keep their own values: a subscription starts
    /// from the state every post (and `clearRetained`) this bus made before it left, as
    /// `clearRetained(name:)` says.
    public func notifications(
        named pattern: NamePattern, buffering: BufferingPolicy = .default, retained: Bool
    ) throws(BusError) -> NotificationSequence {
        NotificationSequence(events: BusEventSequence(handle: try subscribe(pattern, buffering, retained: retained)))
    }

    /// `events(named:buffering:)` that starts with the retained values, as
    /// `notifications(named:buffering:retained:)`.
    public func events(
        named pattern: NamePattern, buffering: BufferingPolicy = .default, retained: Bool
    ) throws(BusError) -> BusEventSequence {
        BusEventSequence(handle: try subscribe(pattern, buffering, retained: retained))
    }

    /// `subscribe(_:sink:)` that starts with the retained values, as
    /// `notifications(named:buffering:retained:)`: the sink gets them first, marked `isRetained`.
    public func subscribe(_ pattern: NamePattern, sink: any BusEventSink, retained: Bool) throws(BusError) -> SinkSubscription {
        SinkSubscription(handle: try subscribe(pattern, .default, sink: sink, retained: retained))
    }

    /// `addObserver(forName:buffering:using:)` that starts with the retained values, as
    /// `notifications(named:buffering:retained:)`: `block` sees them first, marked `isRetained`.
    public func addObserver(
        forName pattern: NamePattern, buffering: BufferingPolicy = .default, retained: Bool,
        using block: @escaping @isolated(any) @Sendable (BusNotification) async -> Void
    ) throws(BusError) -> ObservationToken {
        observe(try subscribe(pattern, buffering, retained: retained), block)
    }

    /// The current state of `pattern`'s names, then the end: the retained values (and any live
    /// notification that arrived meanwhile, newer), after which the sequence ends
    /// (`nbus subscribe --retained-only`). Through no broker that keeps values it ends at once.
    package func currentState(
        named pattern: NamePattern, buffering: BufferingPolicy = .default
    ) throws(BusError) -> BusEventSequence {
        BusEventSequence(handle: try subscribe(pattern, buffering, endsAfterRetained: true))
    }

    /// Waits for the retained values of this bus's subscriptions around `pattern` that asked for
    /// them; true when every one came from a broker that takes all publishers' notifications
    /// (then `ready` needs no publisher's echo), false when there were none to wait for or
    /// another echo is still needed.
    func retainedDelivered(_ pattern: NamePattern, timeout: Duration) async throws(BusError) -> Bool {
        let pending = retainedSubscriptions.pending(around: pattern)
        guard !pending.isEmpty else { return false }
        let outcomes: [RetainedDelivery.Outcome?]? = await withTaskGroup(of: [RetainedDelivery.Outcome?]?.self) { group in
            group.addTask {
                var outcomes: [RetainedDelivery.Outcome?] = []
                for delivery in pending { outcomes.append(await delivery.wait()) }
                return outcomes
            }
            group.addTask {
                // Cancelled when the deliveries came first: either way this task's answer is nil.
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if Task.isCancelled { throw .cancelled }
        guard let outcomes else { throw .timedOut(what: "the retained values of \(pattern)", after: timeout) }
        return outcomes.allSatisfy { outcome in
            if case .delivered(_, true)? = outcome { return true }
            return false
        }
    }
}

/// A bus's subscriptions whose retained values have not all arrived, for `Bus.ready(_:)`.
final class RetainedSubscriptions: Sendable {
    private let entries = Mutex<[(pattern: NamePattern, delivery: RetainedDelivery)]>([])

    func add(pattern: NamePattern, _ delivery: RetainedDelivery) {
        entries.withLock { $0.append((pattern, delivery)) }
    }

    /// The deliveries of subscriptions to `pattern` or to patterns within or around it (one
    /// prefix starts with the other), forgetting those that ended.
    func pending(around pattern: NamePattern) -> [RetainedDelivery] {
        entries.withLock { entries in
            entries.removeAll { $0.delivery.outcome != nil }
            return entries.filter { entry in
                entry.pattern.subscriptionPrefix.starts(with: pattern.subscriptionPrefix)
                    || pattern.subscriptionPrefix.starts(with: entry.pattern.subscriptionPrefix)
            }.map(\.delivery)
        }
    }
}
