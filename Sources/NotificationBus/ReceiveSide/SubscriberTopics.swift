/// The subscriber side's topics: which data prefixes and presence announcements the SUB socket
/// holds for this bus's subscriptions, counted per subscription so the first one subscribes and
/// the last one unsubscribes. Inputs are subscriptions coming and going and end-of-stream records
/// to acknowledge; outputs are socket actions, in the order they must happen. No sockets.
struct SubscriberTopics {
    enum Action: Equatable {
        /// Subscribe `topic` on the SUB socket.
        case subscribe([UInt8])
        /// Unsubscribe `topic` on the SUB socket.
        case unsubscribe([UInt8])
        /// Looped back: this bus's own publisher must see the subscription come or go, as its
        /// XPUB would have (`PublisherStateMachine.localSubscriptionChanged`).
        case localSubscription(prefix: [UInt8], presenceTopic: [UInt8], subscribed: Bool)
        /// Looped back: one subscription fewer wants `prefix` from this bus's own posts
        /// (`PublisherInterest.changeLocal`; `Bus.subscribe` counted it in before queueing).
        case releaseLocalInterest([UInt8])
    }

    /// This bus's id, announced in presence topics and acknowledgements.
    let busID: UInt64
    /// The SUB socket is not connected to this bus's own publisher: posts reach local
    /// subscriptions directly, and the publisher side learns of them from `.localSubscription`.
    let loopback: Bool
    private(set) var prefixCounts: [[UInt8]: Int] = [:]
    private(set) var presenceCounts: [NamePattern: Int] = [:]

    init(busID: UInt64, loopback: Bool) {
        self.busID = busID
        self.loopback = loopback
    }

    /// A subscription to `pattern` starts. Presence goes after the data prefix on the same pipe,
    /// so a publisher that sees it already has the data subscription.
    mutating func add(_ pattern: NamePattern) -> [Action] {
        var actions: [Action] = []
        let prefix = pattern.subscriptionPrefix
        prefixCounts[prefix, default: 0] += 1
        if prefixCounts[prefix] == 1 { actions.append(.subscribe(prefix)) }
        presenceCounts[pattern, default: 0] += 1
        if presenceCounts[pattern] == 1 {
            let topic = ControlNames.presenceTopic(bus: busID, pattern: pattern)
            actions.append(.subscribe(topic))
            if loopback { actions.append(.localSubscription(prefix: prefix, presenceTopic: topic, subscribed: true)) }
        }
        return actions
    }

    /// A subscription to `pattern` ends (one `add` for it came before; anything else is a
    /// programmer error). Presence goes first, the data prefix last.
    mutating func remove(_ pattern: NamePattern) -> [Action] {
        guard let presence = presenceCounts[pattern], let data = prefixCounts[pattern.subscriptionPrefix] else {
            preconditionFailure("removing a subscription to \(pattern) that was never added")
        }
        let prefix = pattern.subscriptionPrefix
        var actions: [Action] = loopback ? [.releaseLocalInterest(prefix)] : []
        if presence == 1 {
            presenceCounts[pattern] = nil
            let topic = ControlNames.presenceTopic(bus: busID, pattern: pattern)
            actions.append(.unsubscribe(topic))
            if loopback { actions.append(.localSubscription(prefix: prefix, presenceTopic: topic, subscribed: false)) }
        } else {
            presenceCounts[pattern] = presence - 1
        }
        if data == 1 {
            prefixCounts[prefix] = nil
            actions.append(.unsubscribe(prefix))
        } else {
            prefixCounts[prefix] = data - 1
        }
        return actions
    }

    /// A publisher's final end-of-stream record arrived and was processed: acknowledge it
    /// upstream. Subscribing and unsubscribing at once is enough for the publisher's XPUB to see it.
    func acknowledgeEndOfStream(publisher: UInt64) -> [Action] {
        let topic = ControlNames.endOfStreamAcknowledgement(publisher: publisher, subscriber: busID)
        return [.subscribe(topic), .unsubscribe(topic)]
    }
}
