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
/// live, then posts the request with a `reply-to` header; a responder posts its answer there.
extension Bus {
    /// How long `request` waits for a first subscriber of the request's name at this publisher
    /// before it says no one responds: subscriptions reach a publisher within milliseconds of
    /// its connection, so a responder that exists is seen well within this.
    public static let noResponderGrace: Duration = .milliseconds(500)

    /// Posts a request to `name` and returns the first reply (check `RequestReply.statusHeader`
    /// for `error` replies). Throws `.noResponders` at once when nothing subscribes to `name` at
    /// this publisher (within `noResponderGrace`), `.timedOut` when no reply comes within
    /// `timeout`, `.closed` or `.cancelled`. Needs a bus that both publishes and subscribes.
    public func request(
        _ name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified, timeout: Duration = .seconds(5)
    ) async throws(BusError) -> BusNotification {
        guard !configuration.publish.isEmpty else { throw .notAPublisher }
        guard !configuration.subscribe.isEmpty else { throw .notASubscriber }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        do {
            try await waitForSubscribers(count: 1, matching: name, timeout: min(timeout, Self.noResponderGrace))
        } catch {
            guard error.code == .timedOut else { throw error }
            throw .noResponders(name)
        }
        let replyName = RequestReply.inboxName(requester: publisherID, number: core.makeID())
        let replyPattern = NamePattern(exactly: replyName)
        let replies = try notifications(named: replyPattern)
        defer { replies.cancel() }
        try await ready(replyPattern, timeout: clock.now.duration(to: deadline))
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

    /// Answers requests matching `pattern` with `handler`'s reply, posted to each request's
    /// `reply-to` name (requests without a valid one are ignored). Stops when the token is
    /// cancelled or dropped.
    public func respond(
        to pattern: NamePattern, buffering: BufferingPolicy = .default,
        using handler: @escaping @Sendable (BusNotification) async -> Reply
    ) throws(BusError) -> ObservationToken {
        try addObserver(forName: pattern, buffering: buffering) { [weak self] request in
            guard RequestReply.replyName(of: request) != nil else { return }
            let reply = await handler(request)
            // Fails only when the bus is closing (or the reply breaks a limit, which the
            // requester then sees as a timeout): nothing else to tell.
            try? await self?.reply(to: request, with: reply)
        }
    }

    /// Posts `reply` to `request`'s `reply-to` name, with its `status` header set. Throws
    /// `.notARequest` when the request has no valid `reply-to` header, or what `post` throws.
    public func reply(to request: BusNotification, with reply: Reply) async throws(BusError) {
        guard let replyName = RequestReply.replyName(of: request) else {
            throw .notARequest(request.name)
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
