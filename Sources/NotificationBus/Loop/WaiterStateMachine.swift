/// What a caller of `ready`, `waitForSubscribers` or `waitForHandshakeRefusal` waits for, without
/// the continuation (the event loop keeps that, by `id`): a value the waiter machine can hold and
/// its tests can build.
struct WaitRequest: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A readiness token `_nbus.ready.<bus>.<n>` for `pattern`'s subscription: resolved when its
        /// echo arrives from a publisher.
        case ready(token: NotificationName, pattern: NamePattern)
        /// At least (or, with `atMost`, at most) `count` subscribers match `name` at this publisher.
        /// `joinedOnly` (a wait for at least some that starts a stream): with several brokers, a
        /// subscriber counts once it came through every one, or 1 s after the first
        /// (`PublisherStateMachine.joining`); request/reply asks whether anyone is there now, on
        /// any path, and sets it false (a broker down must not make responders look absent).
        case subscribers(count: Int, name: NotificationName, atMost: Bool, joinedOnly: Bool = true)
        /// This publisher has seen a subscription to exactly `name` (its topic: the name's bytes and
        /// NUL), not merely one that covers it: `request` learns so that a subscription of its own
        /// came back through the broker (BusRequestReply.swift says why that matters).
        case exactSubscription(name: NotificationName)
        /// A server refused this bus's connection (`BusStats.handshakesRefused` > 0, or a
        /// mechanism mismatch).
        case handshakeRefused
    }

    let id: UInt64
    let kind: Kind
    /// Monotonic nanoseconds.
    let deadline: UInt64
    /// For the timeout's message: "a publisher to confirm orders.>".
    let what: String
    let timeoutMilliseconds: Int

    /// The subscription topic of a `.ready` token (its name and NUL: the exact frame start of its echo).
    var tokenTopic: [UInt8]? {
        guard case .ready(let token, _) = kind else { return nil }
        return Array(token.rawValue.utf8) + [0]
    }
}

/// The facts about the bus a new wait is judged against, read by the event loop when it adds one.
struct WaitFacts: Equatable {
    var isSubscriber = false
    var isPublisher = false
    /// The subscriber is looped back to this bus's own publisher: every local subscription is live.
    var loopback = false
    /// For `.ready`: a subscription of this bus can receive names the pattern matches.
    var readyPatternCovered = false
    /// For `.subscribers`: the subscriber count now.
    var subscriberCount = 0
    /// For `.exactSubscription`: the publisher has the name's exact topic now.
    var exactlySubscribed = false
    /// For `.handshakeRefused`: a server already refused (or met it with another mechanism).
    var handshakesCannotSucceed = false
}

/// The bus's pending waits and their deadlines: inputs are new waits, cancellations, echoes of
/// readiness tokens, changes of the subscriber count, handshake refusals, the clock and closing;
/// the outputs are actions for the event loop. No sockets, no continuations, no clock of its own
/// (every input that needs the time is given `now`), so every case has a direct table test.
struct WaiterStateMachine {
    enum Action: Equatable {
        /// Subscribe the readiness token's topic on the SUB socket: ordered after every
        /// subscription already sent, so a publisher that echoes it has them all.
        case subscribeToken([UInt8])
        /// The token's wait is over: take its topic back.
        case unsubscribeToken([UInt8])
        /// Resume the caller waiting under `id`: with `error`, or successfully when nil.
        case resume(id: UInt64, error: BusError?)
    }

    private(set) var pending: [WaitRequest] = []

    /// The earliest deadline among pending waits, for the loop's poll timeout.
    var nextDeadline: UInt64? { pending.lazy.map(\.deadline).min() }

    /// A new wait: settled at once when the facts already decide it, otherwise kept until its
    /// deadline.
    mutating func add(_ request: WaitRequest, facts: WaitFacts) -> [Action] {
        switch request.kind {
        case .ready(_, let pattern):
            guard facts.isSubscriber else { return [.resume(id: request.id, error: .notASubscriber)] }
            guard facts.readyPatternCovered else { return [.resume(id: request.id, error: .notSubscribed(pattern))] }
            // Looped back, every local subscription is live at this bus's own publisher already.
            if facts.loopback { return [.resume(id: request.id, error: nil)] }
            pending.append(request)
            return request.tokenTopic.map { [.subscribeToken($0)] } ?? []
        case .subscribers(let count, _, let atMost, _):
            guard facts.isPublisher else { return [.resume(id: request.id, error: .notAPublisher)] }
            if Self.satisfied(count: count, atMost: atMost, current: facts.subscriberCount) {
                return [.resume(id: request.id, error: nil)]
            }
            pending.append(request)
            return []
        case .exactSubscription:
            guard facts.isPublisher else { return [.resume(id: request.id, error: .notAPublisher)] }
            if facts.exactlySubscribed { return [.resume(id: request.id, error: nil)] }
            pending.append(request)
            return []
        case .handshakeRefused:
            if facts.handshakesCannotSucceed { return [.resume(id: request.id, error: nil)] }
            pending.append(request)
            return []
        }
    }

    /// The caller's task was cancelled (a wait that already ended is not found: nothing to do).
    mutating func cancel(id: UInt64) -> [Action] {
        guard let index = pending.firstIndex(where: { $0.id == id }) else { return [] }
        return finish(pending.remove(at: index), .cancelled)
    }

    /// A publisher echoed a readiness token (the echo's name bytes).
    mutating func tokenEchoed(_ nameBytes: some Collection<UInt8>) -> [Action] {
        guard let index = pending.firstIndex(where: { request in
            if case .ready(let token, _) = request.kind { return token.rawValue.utf8.elementsEqual(nameBytes) }
            return false
        }) else { return [] }
        return finish(pending.remove(at: index), nil)
    }

    /// Subscribing the token of wait `id` failed: the wait fails with the reason instead of
    /// timing out later.
    mutating func tokenFailed(id: UInt64, _ error: BusError) -> [Action] {
        guard let index = pending.firstIndex(where: { $0.id == id }) else { return [] }
        pending.remove(at: index)
        return [.resume(id: id, error: error)]
    }

    /// The publisher's view of its subscribers changed: `count(name)` is the count now, and
    /// `exactlySubscribed(name)` whether the name's exact topic is subscribed.
    /// A wait for at least some counts with `joinedCount` when given (subscribers that reached
    /// every path of a publisher with several brokers, or long enough ago: `PublisherStateMachine`).
    mutating func subscribersChanged(
        count: (NotificationName) -> Int, exactlySubscribed: (NotificationName) -> Bool = { _ in false },
        joinedCount: ((NotificationName) -> Int)? = nil
    ) -> [Action] {
        var actions: [Action] = []
        pending.removeAll { request in
            switch request.kind {
            case .subscribers(let wanted, let name, let atMost, let joinedOnly):
                let current = !atMost && joinedOnly ? joinedCount?(name) ?? count(name) : count(name)
                guard Self.satisfied(count: wanted, atMost: atMost, current: current) else { return false }
            case .exactSubscription(let name):
                guard exactlySubscribed(name) else { return false }
            case .ready, .handshakeRefused:
                return false
            }
            actions.append(.resume(id: request.id, error: nil))
            return true
        }
        return actions
    }

    /// A server refused this bus's connection in a way retrying cannot change.
    mutating func handshakesCannotSucceed() -> [Action] {
        var actions: [Action] = []
        pending.removeAll { request in
            guard case .handshakeRefused = request.kind else { return false }
            actions.append(.resume(id: request.id, error: nil))
            return true
        }
        return actions
    }

    /// The clock reads `now`: waits whose deadline passed time out.
    mutating func tick(now: UInt64) -> [Action] {
        var expired: [WaitRequest] = []
        pending.removeAll { request in
            guard request.deadline <= now else { return false }
            expired.append(request)
            return true
        }
        return expired.flatMap { request in
            finish(request, .timedOut(what: request.what, after: .milliseconds(request.timeoutMilliseconds)))
        }
    }

    /// The bus closes: every wait fails with `.closed`.
    mutating func close() -> [Action] {
        let all = pending
        pending.removeAll()
        return all.flatMap { finish($0, .closed) }
    }

    /// The actions that end `request`: its token's topic goes (a ready wait), then the caller resumes.
    private func finish(_ request: WaitRequest, _ error: BusError?) -> [Action] {
        var actions: [Action] = []
        if let topic = request.tokenTopic { actions.append(.unsubscribeToken(topic)) }
        actions.append(.resume(id: request.id, error: error))
        return actions
    }

    private static func satisfied(count: Int, atMost: Bool, current: Int) -> Bool {
        atMost ? current <= count : current >= count
    }
}
