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
