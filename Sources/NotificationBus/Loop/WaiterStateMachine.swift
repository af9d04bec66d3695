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
