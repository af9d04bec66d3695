/// What a responder answers a request with (`Bus.respond`): a payload, headers, and whether it
/// answers or reports a failure (`RequestReply.statusHeader`).
public struct Reply: Sendable {
    /// The reply's payload (for an error, the reason as UTF-8 text).
    public var payload: [UInt8]
    /// Extra headers; `status` is set from `isError`.
    public var headers: NotificationHeaders
    /// Whether the responder failed (`status: error`).
    public var isError: Bool

    /// A reply answering the request.
    public init(payload: [UInt8], headers: NotificationHeaders = NotificationHeaders()) {
        self.payload = payload
        self.headers = headers
        isError = false
    }

    /// A reply saying the responder failed, and why.
    public static func error(_ reason: String) -> Reply {
        var reply = Reply(payload: Array(reason.utf8))
        reply.isError = true
        return reply
    }
}

/// Request/reply (NBP-1 §16): the requester subscribes to a one-off reply name, waits until it is
/// live, then posts the request with a `reply-to` header; a responder waits until that
/// subscription has reached its own publisher, then posts its answer there.
///
/// Why both waits: through a broker the request and the reply subscription travel on different
/// connections. The request reaches the responder's subscriber socket; the subscription reaches
/// its publisher socket, which drops a post nobody has subscribed to. Under load (60 requesters
/// at once) the request often came first, and the reply was dropped as unwanted: the requester
/// then timed out with its responder running. The requester cannot see the responder's
/// publisher; the responder can, so it waits there (bounded by `requesterWait`).
extension Bus {
    /// How long `request` waits for a first subscriber of the request's name at this publisher
    /// before it says no one responds, when this bus's publisher binds (it cannot tell when every
    /// subscriber that will connect has). A publisher that connects to a broker does not guess:
    /// it learns when it has every subscription the broker holds (see `request`).
    public static let noResponderGrace: Duration = .milliseconds(500)

    /// How long `reply(to:with:)` waits for the requester's subscription to the reply name to
    /// reach this publisher before it gives up on the reply: a requester that is still there has
    /// it on its way (it saw it reach the broker before it posted); one that is gone never will.
    public static let requesterWait: Duration = .seconds(5)

    /// Replies `respond` has waiting for their requester's subscription at once, at most: past
    /// it, the next request's reply waits for one of them to finish. Each is a wait the I/O thread
    /// re-checks when subscriptions change, so they are bounded.
    static let concurrentReplyLimit = 256

    /// Posts a request to `name` and returns the first reply (check `RequestReply.statusHeader`
    /// for `error` replies). Throws `.noResponders` when nothing subscribes to `name`, `.timedOut`
    /// when no reply comes within `timeout` (or, through a broker, when none confirms the reply
    /// subscription within it), `.closed` or `.cancelled`. Needs a bus that both publishes and
    /// subscribes.
    ///
    /// "No responders" is said only when known. Through a broker (this bus's publisher connects),
    /// the broker sends a connecting publisher every subscription it holds, then each new one in
    /// order; once this publisher has seen a subscription this bus made after that, it knows
    /// everything the broker held, and nothing subscribing to `name` means no responder: said
    /// within a few round trips to the broker, however loaded. When this bus's publisher binds, it
    /// waits `noResponderGrace` for a subscriber to connect.
    public func request(
        _ name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified, timeout: Duration = .seconds(5)
    ) async throws(BusError) -> BusNotification {
        guard !configuration.publish.isEmpty else { throw .notAPublisher }
        guard !configuration.subscribe.isEmpty else { throw .notASubscriber }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        let throughBroker = configuration.publish.allSatisfy { !$0.isBind }
        if !throughBroker {
            do {
                try await waitForSubscribersOnAnyPath(count: 1, matching: name, timeout: min(timeout, Self.noResponderGrace))
            } catch {
                guard error.code == .timedOut else { throw error }
                throw .noResponders(name)
            }
        }
        let replyName = RequestReply.inboxName(requester: publisherID, number: core.makeID())
        let replyPattern = NamePattern(exactly: replyName)
        let replies = try notifications(named: replyPattern)
        defer { replies.cancel() }
        if throughBroker {
            try await awaitResponders(of: name, replyName: replyName, deadline: deadline, timeout: timeout)
        } else {
            try await ready(replyPattern, timeout: clock.now.duration(to: deadline))
        }
        var requestHeaders = headers
        requestHeaders[RequestReply.replyToHeader] = replyName.rawValue
        try await post(name: name, payload: payload, headers: requestHeaders, contentType: contentType)

        enum Outcome: Sendable {
            case reply(BusNotification)
            /// The reply subscription ended without a reply: the bus closed (or the task was cancelled).
            case ended
            case timedOut
        }
        let remaining = clock.now.duration(to: deadline)
        let outcome = await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                var iterator = replies.makeAsyncIterator()
                return await iterator.next().map(Outcome.reply) ?? .ended
            }
            group.addTask {
                // Cancelled (a reply came first): the group ends; the outcome is not read.
                try? await Task.sleep(for: remaining)
                return .timedOut
            }
            let first = await group.next() ?? .ended
            group.cancelAll()
            return first
        }
        switch outcome {
        case .reply(let reply):
            return reply
        case .ended, .timedOut:
            if Task.isCancelled { throw .cancelled }
            guard case .timedOut = outcome else { throw .closed }
            throw .timedOut(what: "a reply to \(name)", after: timeout)
        }
    }

    /// Through a broker: returns once the reply subscription is live at the broker and something
    /// subscribes to `name` there; throws `.noResponders` once this publisher knows every
    /// subscription the broker holds and none covers `name`.
    private func awaitResponders(
        of name: NotificationName, replyName: NotificationName, deadline: ContinuousClock.Instant, timeout: Duration
    ) async throws(BusError) {
        let clock = ContinuousClock()
        let unconfirmed = BusError.timedOut(what: "a broker to confirm the reply subscription \(replyName)", after: timeout)
        // The broker forwarded the reply subscription to this bus's own publisher, so it holds it:
        // a reply reaching the broker from now on is routed here.
        do {
            try await waitForExactSubscription(of: replyName, timeout: clock.now.duration(to: deadline))
        } catch {
            guard error.code == .timedOut else { throw error }
            throw unconfirmed
        }
        if try await hasSubscriber(name) { return }
        // Not known yet. The reply subscription may have come in the burst of every subscription
        // the broker holds, sent when this publisher's connection came up, and read only partly
        // so far. A marker subscribed now is sent after all of that burst: once it is here, so is
        // every subscription the broker held, responders' included.
        let marker = RequestReply.inboxName(requester: publisherID, number: core.makeID())
        let markerSubscription = try notifications(named: NamePattern(exactly: marker))
        defer { markerSubscription.cancel() }
        do {
            try await waitForExactSubscription(of: marker, timeout: clock.now.duration(to: deadline))
        } catch {
            guard error.code == .timedOut else { throw error }
            throw unconfirmed
        }
        guard try await hasSubscriber(name) else { throw .noResponders(name) }
    }

    /// Whether something subscribes to `name` at this publisher now.
    private func hasSubscriber(_ name: NotificationName) async throws(BusError) -> Bool {
        do {
            try await waitForSubscribersOnAnyPath(count: 1, matching: name, timeout: .zero)
            return true
        } catch {
            guard error.code == .timedOut else { throw error }
            return false
        }
    }

    /// Answers requests matching `pattern` with `handler`'s reply, posted to each request's
    /// `reply-to` name (requests without a valid one are ignored). Stops when the token is
    /// cancelled or dropped.
    ///
    /// `handler` runs for one request at a time, in order; the replies are posted side by side,
    /// each once its requester's subscription has reached this publisher (`reply(to:with:)`), so
    /// a requester that went away holds up no other's reply.
    public func respond(
        to pattern: NamePattern, buffering: BufferingPolicy = .default,
        using handler: @escaping @Sendable (BusNotification) async -> Reply
    ) throws(BusError) -> ObservationToken {
        let requests = try notifications(named: pattern, buffering: buffering)
        let task = Task { [weak self] in
            await withTaskGroup(of: Void.self) { replies in
                var posting = 0
                for await request in requests {
                    guard RequestReply.replyName(of: request) != nil else { continue }
                    let reply = await handler(request)
                    if posting >= Self.concurrentReplyLimit, await replies.next() != nil { posting -= 1 }
                    posting += 1
                    replies.addTask {
                        // Fails only when the bus is closing, the requester is gone (its
                        // subscription never came), or the reply breaks a limit (the requester
                        // then sees a timeout): nothing else to tell.
                        try? await self?.reply(to: request, with: reply)
                    }
                }
            }
        }
        return ObservationToken(task: task, sequence: requests)
    }

    /// Posts `reply` to `request`'s `reply-to` name, with its `status` header set, once something
    /// subscribes to that name at this publisher (the requester's subscription, on its way when
    /// the request came). Throws `.notARequest` when the request has no valid `reply-to` header,
    /// `.timedOut` when no subscription to it comes within `requesterWait` (the requester is
    /// gone), or what `post` throws.
    public func reply(
        to request: BusNotification, with reply: Reply, requesterWait: Duration = Bus.requesterWait
    ) async throws(BusError) {
        guard let replyName = RequestReply.replyName(of: request) else {
            throw .notARequest(request.name)
        }
        do {
            try await waitForSubscribersOnAnyPath(count: 1, matching: replyName, timeout: requesterWait)
        } catch {
            guard error.code == .timedOut else { throw error }
            throw .timedOut(what: "the requester's subscription to \(replyName)", after: requesterWait)
        }
        var headers = reply.headers
        headers[RequestReply.statusHeader] = reply.isError ? RequestReply.error : RequestReply.ok
        try await post(name: replyName, payload: reply.payload, headers: headers)
    }

    /// `respond(to:using:)` for a handler that only returns the reply's payload.
    public func respond(
        to pattern: NamePattern, buffering: BufferingPolicy = .default,
        using handler: @escaping @Sendable (BusNotification) async -> [UInt8]
    ) throws(BusError) -> ObservationToken {
        try respond(to: pattern, buffering: buffering) { (request: BusNotification) async -> Reply in
            Reply(payload: await handler(request))
        }
    }
}
