import FoundationEssentials
import ZeroMQ

/// Typed messages: the bus's first face (issue 42). A message type is posted as its JSON under its
/// `busName` and observed by type, by Foundation message identifier, or as a family; the byte API
/// (`post(name:payload:)`, `notifications(named:)`) is what this is built on and stays beside it.
extension Bus {
    // MARK: Posting

    /// Posts `message` under its type's `busName`, encoded as JSON on the calling task.
    ///
    /// Throws `.subjectRequired` for a type whose `Subject` is a `BusSubject` (post it with
    /// `post(_:subject:)`), `.encodingFailed` when its `Encodable` conformance throws, and what
    /// `post(name:payload:)` throws. A post no subscriber wants is not encoded at all.
    @inlinable
    public nonisolated(nonsending) func post<M: BusMessage>(
        _ message: M, headers: NotificationHeaders = NotificationHeaders()
    ) async throws(BusError) {
        // Inlinable, as `post(name:payload:)`: when the outbound queue has room a post is
        // synchronous work in the caller's frame, specialized for `M` (three nested async calls of
        // generic code showed in the in-process typed profile).
        // A type that declares itself retained goes the retained way (its JSON always made), and
        // a bus with a tracer the traced way (`send <name>`): both through `postEncoding`.
        if M.busRetained || tracer != nil {
            guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
            return try await postEncoding(message, name: M.busName, headers: headers)
        }
        var local: (any AnyObject & Sendable)?
        var frame: ZeroMQ.Message? = try messageFrame(message, headers, local: &local)
        if frame == nil { return }  // no subscriber wants it (counted in `stats.unwanted`)
        if try queue(&frame, M.busName, localValue: local) { return }
        try await queueWhenThereIsSpace(&frame, M.busName, localValue: local)
    }

    /// `post(_:headers:)`'s synchronous part: the checks, and the frame (nil: no subscriber
    /// wants the name). Looped back (issue 42, item 4), `local` gets the value for this bus's own
    /// typed subscriptions and the frame carries JSON only for subscribers through the XPUB.
    /// Inlinable, so `LocalMessage<M>` is a type the caller's specialization knows (generic code
    /// looked its metadata up at run time on every post).
    @inlinable
    func messageFrame<M: BusMessage>(
        _ value: M, _ headers: NotificationHeaders, local: inout (any AnyObject & Sendable)?
    ) throws(BusError) -> ZeroMQ.Message? {
        guard !M.hasBusSubject else { throw .subjectRequired(type: String(describing: M.self), name: M.busName) }
        guard deliversToItself else { return try encodeMessageForPost(value, M.busName, headers) }
        guard let payload = try localPayload(value, M.busName) else { return nil }
        let localValue = LocalMessage(value, core: core)
        let frame = try queueLocally(M.busName, payload, headers, localValue)
        if frame != nil { local = localValue }
        return frame
    }

    /// A looped-back typed post's payload: JSON only for subscribers through the XPUB, else
    /// empty; nil when no subscriber wants the name (after the checks every post passes).
    @usableFromInline
    func localPayload<M: BusMessage>(_ value: M, _ name: NotificationName) throws(BusError) -> [UInt8]? {
        try checkPostable(name)
        guard try isWanted(name) else { return nil }
        return core.isWantedRemotely(name) ? try encodeBusPayload(value) : []
    }

    /// `encodeOrQueue` for a looped-back typed post: written straight into the outbound queue
    /// with its value beside it when there is room (nil then: no frame of its own, made, copied
    /// and freed per post as before); otherwise its own frame, which the caller queues with the
    /// value when there is room.
    @usableFromInline
    func queueLocally(
        _ name: NotificationName, _ payload: [UInt8], _ headers: NotificationHeaders, _ localValue: LocalMessageValue
    ) throws(BusError) -> ZeroMQ.Message? {
        try queueOrFrame(size: try encodedSize(name, payload, headers), name, payload, headers, .json, localValue: localValue)
    }

    /// Posts `message` about `subject`: under `<busName>.<subject.busSubjectID>`, so only that
    /// subject's observers (and those of every subject) receive it.
    public nonisolated(nonsending) func post<M: BusAsyncMessage>(
        _ message: M, subject: M.Subject, headers: NotificationHeaders = NotificationHeaders()
    ) async throws(BusError) where M.Subject: BusSubject {
        try await postEncoding(message, name: try Subjects.name(M.busName, subjectID: subject.busSubjectID), headers: headers)
    }

    /// `post(_:subject:)` for a main-actor message type.
    public nonisolated(nonsending) func post<M: BusMainActorMessage>(
        _ message: M, subject: M.Subject, headers: NotificationHeaders = NotificationHeaders()
    ) async throws(BusError) where M.Subject: BusSubject {
        try await postEncoding(message, name: try Subjects.name(M.busName, subjectID: subject.busSubjectID), headers: headers)
    }

    @usableFromInline
    nonisolated(nonsending) func postEncoding<M: BusMessage>(
        _ value: M, name: NotificationName, headers: NotificationHeaders
    ) async throws(BusError) {
        guard let tracer else { return try await postEncodingUntraced(value, name: name, headers: headers) }
        var headers = headers
        let span = tracer.startSend(name, payloadCount: nil, headers: &headers)
        defer { span?.end() }
        do throws(BusError) {
            try await postEncodingUntraced(value, name: name, headers: headers)
        } catch {
            span?.recordError(error)
            throw error
        }
    }

    nonisolated(nonsending) func postEncodingUntraced<M: BusMessage>(
        _ value: M, name: NotificationName, headers: NotificationHeaders
    ) async throws(BusError) {
        if M.busRetained {
            // State: posted retained, its JSON always made (an empty payload would clear it).
            var message = try retainedFrame(name, try encodeBusPayload(value), headers, .json, retainFor: M.busRetainFor)
            if message == nil { return }  // no subscriber and no retaining broker or keeper
            if try queue(&message, name) { return }
            return try await queueWhenThereIsSpace(&message, name)
        }
        if deliversToItself { return try await postLocally(value, name: name, headers: headers) }
        var message: ZeroMQ.Message? = try encodeMessageForPost(value, name, headers)
        if message == nil { return }  // no subscriber wants it (counted in `stats.unwanted`)
        if try queue(&message, name) { return }
        try await queueWhenThereIsSpace(&message, name)
    }

    /// A looped-back bus's typed post (issue 42, item 4): its own subscriptions get the value
    /// itself, which travels beside the frame (`LocalMessageValue`), so a typed observer in this
    /// process costs no JSON either way. The frame carries the JSON only when a subscriber through
    /// the XPUB (another bus, another process) wants the name; otherwise its body is empty, and a
    /// byte subscription of this bus that matches gets the JSON made for it when routed.
    nonisolated(nonsending) func postLocally<M: BusMessage>(
        _ value: M, name: NotificationName, headers: NotificationHeaders
    ) async throws(BusError) {
        var message: ZeroMQ.Message? = try localFrame(value, name, headers)
        if message == nil { return }  // no subscriber wants it (counted in `stats.unwanted`)
        let local = LocalMessage(value, core: core)
        while true {
            switch core.queue(message: &message, name: name, localValue: local) {
            case .queued: return
            case .closed: throw .closed
            case .full: break
            }
            await core.waitForSpace()
            if Task.isCancelled { throw .cancelled }
        }
    }

    /// `postLocally`'s frame: JSON only for subscribers through the XPUB; nil when no
    /// subscriber wants the name.
    @usableFromInline
    func localFrame<M: BusMessage>(
        _ value: M, _ name: NotificationName, _ headers: NotificationHeaders
    ) throws(BusError) -> ZeroMQ.Message? {
        try checkPostable(name)
        guard try isWanted(name) else { return nil }
        let payload = core.isWantedRemotely(name) ? try encodeBusPayload(value) : []
        return try frame(size: try encodedSize(name, payload, headers), name, payload, headers, .json)
    }

    /// `value`'s JSON, counted; `.encodingFailed` when its `Encodable` conformance throws.
    func encodeBusPayload<M: BusMessage>(_ value: M) throws(BusError) -> [UInt8] {
        let payload: [UInt8]
        do {
            payload = try M.encodeBusPayload(value)
        } catch {
            throw .encodingFailed(type: String(describing: M.self), reason: String(describing: error))
        }
        core.noteMessageEncoded()
        return payload
    }

    /// `encodeForPost` for a message value, from the same pieces, with the JSON made only once a
    /// subscriber is known to want the name (a filtered post costs no encoding).
    @usableFromInline
    func encodeMessageForPost<M: BusMessage>(
        _ value: M, _ name: NotificationName, _ headers: NotificationHeaders
    ) throws(BusError) -> ZeroMQ.Message? {
        try checkPostable(name)
        guard try isWanted(name) else { return nil }
        let payload = try encodeBusPayload(value)
        return try frame(size: try encodedSize(name, payload, headers), name, payload, headers, .json)
    }

    // MARK: Sequences

    /// Subscribes to `type`'s messages as an `AsyncSequence` of values (every subject's, for a type
    /// whose `Subject` is a `BusSubject`). Decoded in the consuming task; what does not decode is
    /// counted in `stats.undecodable`. Live at a publisher once `await bus.ready(sequence.pattern)`.
    public func messages<M: BusMessage>(
        of type: M.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageSequence<M> {
        MessageSequence(events: try messageEvents(of: type, buffering: buffering))
    }

    /// `messages(of:)` for one subject: subscribes exactly `<busName>.<subject id>`.
    public func messages<M: BusAsyncMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageSequence<M> where M.Subject: BusSubject {
        MessageSequence(events: try typedEvents(M.self, subjectID: subject.busSubjectID, buffering: buffering))
    }

    /// `messages(of:)` by Foundation message identifier (`bus.messages(for: .orderCreated)`).
    public func messages<I: NotificationCenter.MessageIdentifier>(
        for identifier: I, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageSequence<I.MessageType> where I.MessageType: BusAsyncMessage {
        try messages(of: I.MessageType.self, buffering: buffering)
    }

    /// A family's messages, one subscription to `F.busPattern`.
    public func messages<F: BusMessageFamily>(
        of family: F.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageSequence<F> {
        MessageSequence(events: try messageEvents(of: family, buffering: buffering))
    }

    /// Each message with its notification (publisher, sequence, time, headers).
    public func messageEnvelopes<M: BusMessage>(
        of type: M.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageEnvelopeSequence<M> {
        MessageEnvelopeSequence(events: try messageEvents(of: type, buffering: buffering))
    }

    /// A family's messages with their notifications.
    public func messageEnvelopes<F: BusMessageFamily>(
        of family: F.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageEnvelopeSequence<F> {
        MessageEnvelopeSequence(events: try messageEvents(of: family, buffering: buffering))
    }

    /// `messageEnvelopes(of:)` for one subject.
    public func messageEnvelopes<M: BusAsyncMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageEnvelopeSequence<M> where M.Subject: BusSubject {
        MessageEnvelopeSequence(events: try typedEvents(M.self, subjectID: subject.busSubjectID, buffering: buffering))
    }

    /// `messageEvents(of:)` for one subject.
    public func messageEvents<M: BusAsyncMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageEventSequence<M> where M.Subject: BusSubject {
        try typedEvents(M.self, subjectID: subject.busSubjectID, buffering: buffering)
    }

    /// Messages, gaps and undecodable notifications in-band, where they happened.
    public func messageEvents<M: BusMessage>(
        of type: M.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageEventSequence<M> {
        try typedEvents(M.self, subjectID: nil, buffering: buffering)
    }

    /// A family's messages, gaps and undecodable notifications in-band.
    public func messageEvents<F: BusMessageFamily>(
        of family: F.Type, buffering: BufferingPolicy = .default
    ) throws(BusError) -> MessageEventSequence<F> {
        MessageEventSequence(events: try typedSubscription(F.busPattern, buffering), decoding: .family())
    }

    func typedEvents<M: BusMessage>(
        _ type: M.Type, subjectID: String?, buffering: BufferingPolicy
    ) throws(BusError) -> MessageEventSequence<M> {
        let pattern = try Subjects.pattern(M.self, subjectID: subjectID)
        return MessageEventSequence(
            events: try typedSubscription(pattern, buffering, retained: M.busRetained), decoding: .single())
    }

    /// A subscription that takes this bus's own typed posts as values (`LocalMessageValue`);
    /// `retained`: it starts with the retained values (a type that declares itself retained).
    func typedSubscription(
        _ pattern: NamePattern, _ buffering: BufferingPolicy, retained: Bool = false
    ) throws(BusError) -> BusEventSequence {
        BusEventSequence(handle: try subscribe(pattern, buffering, retained: retained, takesLocalValues: true))
    }

    // MARK: Observers of async messages

    /// Calls `block` with each of `type`'s messages, on `block`'s own isolation (as
    /// `addObserver(forName:using:)`: `{ @MainActor order in ... }` runs on the main actor), until
    /// the token is cancelled or dropped, which unsubscribes at the publisher. Decoded off the
    /// bus's I/O thread, in the observer's task; what does not decode is counted in
    /// `token.stats.undecodable`.
    public func addObserver<M: BusAsyncMessage>(
        for type: M.Type, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (M) async -> Void
    ) throws(BusError) -> ObservationToken {
        observe(try typedEvents(M.self, subjectID: nil, buffering: buffering), block)
    }

    /// `addObserver(for:using:)` for one subject: subscribes exactly `<busName>.<subject id>`.
    public func addObserver<M: BusAsyncMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (M) async -> Void
    ) throws(BusError) -> ObservationToken where M.Subject: BusSubject {
        observe(try typedEvents(M.self, subjectID: subject.busSubjectID, buffering: buffering), block)
    }

    /// `addObserver(for:using:)` by Foundation message identifier (`bus.addObserver(for: .orderCreated)`).
    public func addObserver<I: NotificationCenter.MessageIdentifier>(
        for identifier: I, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (I.MessageType) async -> Void
    ) throws(BusError) -> ObservationToken where I.MessageType: BusAsyncMessage {
        try addObserver(for: I.MessageType.self, buffering: buffering, using: block)
    }

    /// By identifier, for one subject.
    public func addObserver<I: NotificationCenter.MessageIdentifier>(
        of subject: I.MessageType.Subject, for identifier: I, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (I.MessageType) async -> Void
    ) throws(BusError) -> ObservationToken where I.MessageType: BusAsyncMessage, I.MessageType.Subject: BusSubject {
        try addObserver(of: subject, for: I.MessageType.self, buffering: buffering, using: block)
    }

    /// Calls `block` with each message of a family, on `block`'s own isolation.
    public func addObserver<F: BusMessageFamily>(
        for family: F.Type, buffering: BufferingPolicy = .default,
        using block: @escaping @isolated(any) @Sendable (F) async -> Void
    ) throws(BusError) -> ObservationToken {
        observe(try messageEvents(of: family, buffering: buffering), block)
    }

    // MARK: Observers of main-actor messages

    /// Calls `block` on the main actor with each of `type`'s messages (the onReceive style), until
    /// the token is cancelled or dropped. Decoded before the hop, off the main actor.
    public func addObserver<M: BusMainActorMessage>(
        for type: M.Type, buffering: BufferingPolicy = .default,
        using block: @escaping @MainActor (M) -> Void
    ) throws(BusError) -> ObservationToken {
        observe(try typedEvents(M.self, subjectID: nil, buffering: buffering)) { @MainActor message in block(message) }
    }

    /// The main-actor observer for one subject.
    public func addObserver<M: BusMainActorMessage>(
        of subject: M.Subject, for type: M.Type, buffering: BufferingPolicy = .default,
        using block: @escaping @MainActor (M) -> Void
    ) throws(BusError) -> ObservationToken where M.Subject: BusSubject {
        observe(try typedEvents(M.self, subjectID: subject.busSubjectID, buffering: buffering)) { @MainActor message in
            block(message)
        }
    }

    /// The main-actor observer by Foundation message identifier.
    public func addObserver<I: NotificationCenter.MessageIdentifier>(
        for identifier: I, buffering: BufferingPolicy = .default,
        using block: @escaping @MainActor (I.MessageType) -> Void
    ) throws(BusError) -> ObservationToken where I.MessageType: BusMainActorMessage {
        try addObserver(for: I.MessageType.self, buffering: buffering, using: block)
    }

    /// The main-actor observer by identifier, for one subject.
    public func addObserver<I: NotificationCenter.MessageIdentifier>(
        of subject: I.MessageType.Subject, for identifier: I, buffering: BufferingPolicy = .default,
        using block: @escaping @MainActor (I.MessageType) -> Void
    ) throws(BusError) -> ObservationToken where I.MessageType: BusMainActorMessage, I.MessageType.Subject: BusSubject {
        try addObserver(of: subject, for: I.MessageType.self, buffering: buffering, using: block)
    }

    /// One task per observer, as `addObserver(forName:using:)`: it takes each event, decodes it
    /// (in `next()`, here, not on the I/O thread nor on the observer's actor) and awaits `block`.
    private func observe<Element: Sendable>(
        _ events: MessageEventSequence<Element>, _ block: @escaping @isolated(any) @Sendable (Element) async -> Void
    ) -> ObservationToken {
        let task: Task<Void, Never>
        if let tracer {
            // Each message's block in `process <name>`; the loop itself makes no span.
            let untraced = MessageEventSequence(
                events: BusEventSequence(handle: events.events.handle, traced: false), decoding: events.decoding)
            task = Task {
                for await event in untraced {
                    guard case .message(let envelope) = event else { continue }
                    await tracer.process(envelope.notification) { await block(envelope.message) }
                }
            }
        } else {
            let messages = MessageSequence(events: events)
            task = Task {
                for await message in messages { await block(message) }
            }
        }
        return ObservationToken(task: task, sequence: NotificationSequence(events: events.events))
    }
}
