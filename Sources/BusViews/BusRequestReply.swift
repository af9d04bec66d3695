import NotificationBus

/// Request/reply on the bus, for actions that need an answer: the requester subscribes to a
/// one-off reply name, waits until it is live, then posts the request with a `reply-to` header;
/// a responder posts its answer to that name.
extension Bus {
    /// The header naming where a reply goes.
    public static let replyToHeader = "reply-to"

    /// Posts a request to `name` and returns the first reply, or throws `.timedOut` after `timeout`
    /// (`.closed` when the bus closes first, `.cancelled` when the task is cancelled).
    ///
    /// The reply subscription is live before the request is posted, so a fast responder's answer is not lost.
    public func request(
        _ name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = [:],
        timeout: Duration = .seconds(5)
    ) async throws(BusError) -> Notification {
        let replyName: NotificationName
        do {
            replyName = try NotificationName("reply.\(String(publisherID, radix: 16)).\(UInt64.random(in: 1...UInt64.max))")
        } catch {
            throw .invalidName(error)
        }
        let replyPattern = NamePattern(exactly: replyName)
        let replies = try notifications(named: replyPattern)
        defer { replies.cancel() }
        try await ready(replyPattern, timeout: timeout)
        let requestHeaders = NotificationHeaders(
            headers.filter { $0.key != Self.replyToHeader }.map { ($0.key, $0.value) }
                + [(Self.replyToHeader, replyName.rawValue)])
        try await post(name: name, payload: payload, headers: requestHeaders)

        enum Outcome: Sendable {
            case reply(Notification)
            /// The reply subscription ended without a reply: the bus closed (or the task was cancelled).
            case ended
            case timedOut
        }
        let outcome = await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                var iterator = replies.makeAsyncIterator()
                return await iterator.next().map(Outcome.reply) ?? .ended
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
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
            throw .timedOut(what: "a reply to \(name)", milliseconds: Timestamps.boundedMilliseconds(timeout))
        }
    }

    /// Answers requests matching `pattern`: `handler`'s bytes are posted to each request's `reply-to`
    /// name (requests without one are ignored). Stops when the token is cancelled or dropped.
    public func respond(
        to pattern: NamePattern, buffering: BufferingPolicy = .default,
        using handler: @escaping @Sendable (Notification) async -> [UInt8]
    ) throws(BusError) -> ObservationToken {
        try addObserver(forName: pattern, buffering: buffering) { [weak self] request in
            guard let replyTo = request.headers[Bus.replyToHeader], let replyName = try? NotificationName(replyTo)
            else { return }
            let payload = await handler(request)
            try? await self?.post(name: replyName, payload: payload)
        }
    }
}
