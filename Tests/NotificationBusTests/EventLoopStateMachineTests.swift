import Testing
import ZeroMQ
@testable import NotificationBus

// The bus's event-loop logic driven directly, without sockets: every input is a value, the clock
// is a number the test chooses, and the assertions are on the actions the machines return.

private func name(_ text: String) -> NotificationName { try! NotificationName(text) }
private func pattern(_ text: String) -> NamePattern { try! NamePattern(text) }

private func readyRequest(id: UInt64, deadline: UInt64, pattern text: String = "orders.>") -> WaitRequest {
    WaitRequest(
        id: id, kind: .ready(token: name("_nbus.ready.00000000000000aa.\(id)"), pattern: pattern(text)),
        deadline: deadline, what: "a publisher to confirm \(text)", timeoutMilliseconds: 100)
}

private func subscribersRequest(id: UInt64, count: Int, atMost: Bool = false, deadline: UInt64 = 1_000) -> WaitRequest {
    WaitRequest(
        id: id, kind: .subscribers(count: count, name: name("orders.created"), atMost: atMost), deadline: deadline,
        what: "subscribers", timeoutMilliseconds: 1)
}

private func tokenTopic(_ id: UInt64) -> [UInt8] { Array("_nbus.ready.00000000000000aa.\(id)".utf8) + [0] }

@Suite("WaiterStateMachine: waits, tokens and deadlines, with the clock as an input")
struct WaiterStateMachineTests {
    private let subscriber = WaitFacts(isSubscriber: true, readyPatternCovered: true)

    @Test("A ready wait subscribes its token; the echo resolves it and takes the token back")
    func readyResolvedByEcho() {
        var machine = WaiterStateMachine()
        #expect(machine.add(readyRequest(id: 1, deadline: 500), facts: subscriber) == [.subscribeToken(tokenTopic(1))])
        #expect(machine.nextDeadline == 500)
        #expect(machine.tokenEchoed(Array("_nbus.ready.00000000000000aa.2".utf8)) == [], "another bus's token")
        #expect(
            machine.tokenEchoed(Array("_nbus.ready.00000000000000aa.1".utf8))
                == [.unsubscribeToken(tokenTopic(1)), .resume(id: 1, error: nil)])
        #expect(machine.pending.isEmpty && machine.nextDeadline == nil)
        #expect(machine.tokenEchoed(Array("_nbus.ready.00000000000000aa.1".utf8)) == [], "a repeated echo is a no-op")
    }

    @Test("Deadlines: nothing expires before its time, exactly at it the wait times out and its token goes")
    func deadlines() {
        var machine = WaiterStateMachine()
        _ = machine.add(readyRequest(id: 1, deadline: 500), facts: subscriber)
        _ = machine.add(subscribersRequest(id: 2, count: 1, deadline: 300), facts: WaitFacts(isPublisher: true))
        #expect(machine.nextDeadline == 300)
        #expect(machine.tick(now: 299) == [])
        #expect(machine.tick(now: 300) == [.resume(id: 2, error: .timedOut(what: "subscribers", after: .milliseconds(1)))])
        #expect(machine.nextDeadline == 500)
        #expect(
            machine.tick(now: 10_000)
                == [.unsubscribeToken(tokenTopic(1)),
                    .resume(id: 1, error: .timedOut(what: "a publisher to confirm orders.>", after: .milliseconds(100)))])
        #expect(machine.pending.isEmpty)
    }

    @Test("Settled at once: no SUB socket, no covering subscription, looped back, no XPUB")
    func settledAtOnce() {
        var machine = WaiterStateMachine()
        #expect(machine.add(readyRequest(id: 1, deadline: 9), facts: WaitFacts()) == [.resume(id: 1, error: .notASubscriber)])
        #expect(
            machine.add(readyRequest(id: 2, deadline: 9), facts: WaitFacts(isSubscriber: true))
                == [.resume(id: 2, error: .notSubscribed(pattern("orders.>")))])
        // Looped back (an embedded bus): every local subscription is live at its own publisher.
        #expect(
            machine.add(readyRequest(id: 3, deadline: 9), facts: WaitFacts(isSubscriber: true, loopback: true, readyPatternCovered: true))
                == [.resume(id: 3, error: nil)])
        #expect(machine.add(subscribersRequest(id: 4, count: 1), facts: WaitFacts()) == [.resume(id: 4, error: .notAPublisher)])
        #expect(
            machine.add(subscribersRequest(id: 5, count: 2), facts: WaitFacts(isPublisher: true, subscriberCount: 2))
                == [.resume(id: 5, error: nil)])
        #expect(
            machine.add(WaitRequest(id: 6, kind: .handshakeRefused, deadline: 9, what: "", timeoutMilliseconds: 0),
                facts: WaitFacts(handshakesCannotSucceed: true)) == [.resume(id: 6, error: nil)])
        #expect(machine.pending.isEmpty, "no token was subscribed, none is left")
    }

    @Test("Subscriber counts: at least N resolves when the count reaches N, at most 0 when it falls to 0")
    func subscriberCounts() {
        var machine = WaiterStateMachine()
        let publisher = WaitFacts(isPublisher: true, subscriberCount: 1)
        #expect(machine.add(subscribersRequest(id: 1, count: 3), facts: publisher) == [])
        #expect(machine.add(subscribersRequest(id: 2, count: 0, atMost: true), facts: publisher) == [])
        #expect(machine.subscribersChanged { _ in 2 } == [])
        #expect(machine.subscribersChanged { _ in 3 } == [.resume(id: 1, error: nil)])
        #expect(machine.subscribersChanged { _ in 0 } == [.resume(id: 2, error: nil)])
        #expect(machine.pending.isEmpty)
    }

    @Test("An exact-subscription wait resolves on that exact topic only, not on a count of covering subscribers")
    func exactSubscription() {
        var machine = WaiterStateMachine()
        let inbox = name("_inbox.00000000000000aa.7")
        let request = WaitRequest(id: 1, kind: .exactSubscription(name: inbox), deadline: 9, what: "", timeoutMilliseconds: 0)
        #expect(machine.add(request, facts: WaitFacts()) == [.resume(id: 1, error: .notAPublisher)])
        #expect(
            machine.add(request, facts: WaitFacts(isPublisher: true, exactlySubscribed: true)) == [.resume(id: 1, error: nil)])
        #expect(machine.add(request, facts: WaitFacts(isPublisher: true, subscriberCount: 1)) == [], "a `>` subscriber is not it")
        #expect(machine.subscribersChanged(count: { _ in 1 }, exactlySubscribed: { _ in false }) == [])
        #expect(machine.subscribersChanged(count: { _ in 1 }, exactlySubscribed: { $0 == inbox }) == [.resume(id: 1, error: nil)])
        #expect(machine.pending.isEmpty)
    }

    @Test("Cancel, close and a refused token all end a ready wait, and cancel after the end does nothing")
    func endings() {
        var machine = WaiterStateMachine()
        _ = machine.add(readyRequest(id: 1, deadline: 9), facts: subscriber)
        _ = machine.add(readyRequest(id: 2, deadline: 9), facts: subscriber)
        _ = machine.add(readyRequest(id: 3, deadline: 9), facts: subscriber)
        #expect(machine.cancel(id: 1) == [.unsubscribeToken(tokenTopic(1)), .resume(id: 1, error: .cancelled)])
        #expect(machine.cancel(id: 1) == [], "already ended")
        // The SUB socket refused the token: ready() fails with the reason, not a timeout later.
        let refusal = ZMQError(code: 12, operation: "zmq_setsockopt")
        #expect(machine.tokenFailed(id: 2, .transport(refusal)) == [.resume(id: 2, error: .transport(refusal))])
        #expect(machine.close() == [.unsubscribeToken(tokenTopic(3)), .resume(id: 3, error: .closed)])
        #expect(machine.pending.isEmpty)
        let again = machine.close()
        #expect(again == [])
    }

    @Test("A handshake refusal resolves only the refusal waits")
    func handshakeRefusal() {
        var machine = WaiterStateMachine()
        _ = machine.add(WaitRequest(id: 1, kind: .handshakeRefused, deadline: 9, what: "", timeoutMilliseconds: 0), facts: WaitFacts())
        _ = machine.add(readyRequest(id: 2, deadline: 9), facts: subscriber)
        #expect(machine.handshakesCannotSucceed() == [.resume(id: 1, error: nil)])
        #expect(machine.pending.map(\.id) == [2])
    }
    @Test("Several brokers: a wait for at least some counts the joined subscribers, a wait for at most some every one")
    func waitsCountJoined() {
        var waiters = WaiterStateMachine()
        let name = name("a.b")
        let atLeast = WaitRequest(
            id: 1, kind: .subscribers(count: 1, name: name, atMost: false), deadline: 9, what: "", timeoutMilliseconds: 0)
        let atMost = WaitRequest(
            id: 2, kind: .subscribers(count: 0, name: name, atMost: true), deadline: 9, what: "", timeoutMilliseconds: 0)
        var publisher = WaitFacts()
        publisher.isPublisher = true
        _ = waiters.add(atLeast, facts: publisher)
        publisher.subscriberCount = 1
        _ = waiters.add(atMost, facts: publisher)
        // One subscriber there but still joining: neither wait is over.
        #expect(waiters.subscribersChanged(count: { _ in 1 }, joinedCount: { _ in 0 }) == [])
        #expect(waiters.subscribersChanged(count: { _ in 1 }, joinedCount: { _ in 1 }) == [.resume(id: 1, error: nil)])
        #expect(waiters.subscribersChanged(count: { _ in 0 }, joinedCount: { _ in 0 }) == [.resume(id: 2, error: nil)])
    }
}

@Suite("PublisherStateMachine: what the XPUB reads becomes interest, echoes and counts")
struct PublisherStateMachineTests {
    private let me: UInt64 = 0xaa

    private func subscribe(_ topic: [UInt8]) -> [UInt8] { [1] + topic }
    private func unsubscribe(_ topic: [UInt8]) -> [UInt8] { [0] + topic }
    private func presence(_ bus: UInt64, _ text: String) -> [UInt8] { ControlNames.presenceTopic(bus: bus, pattern: pattern(text)) }

    @Test("Prefix changes reach posting threads before a token is echoed, and the rest at the end of the read")
    func interestBeforeEcho() throws {
        var machine = PublisherStateMachine(publisherID: me)
        #expect(machine.received(subscribe(Array("orders.".utf8)), wallClock: 7) == [])
        let token = Array("_nbus.ready.00000000000000bb.1".utf8)
        let actions = machine.received(subscribe(token + [0]), wallClock: 7)
        #expect(actions.count == 2)
        #expect(actions.first == .changeInterest([.init(prefix: Array("orders.".utf8), subscribed: true)]))
        guard case .send(let echo)? = actions.last else {
            Issue.record("no echo: \(actions)")
            return
        }
        let decoded = try EnvelopeCodec.decode(frame: echo)
        #expect(decoded.name.rawValue == "_nbus.ready.00000000000000bb.1")
        #expect(decoded.publisherID == me && decoded.timestamp == 7 && decoded.sequence == 1)
        #expect(machine.received(subscribe(Array("audit.".utf8)), wallClock: 8) == [])
        #expect(
            machine.endOfRead() == [.changeInterest([.init(prefix: Array("audit.".utf8), subscribed: true)]), .subscribersChanged])
        #expect(machine.endOfRead() == [], "nothing new read")
    }

    @Test("A token's unsubscription and control topics never change the prefixes; a malformed message is ignored")
    func controlTopicsAreNotPrefixes() {
        var machine = PublisherStateMachine(publisherID: me)
        _ = machine.received(unsubscribe(Array("_nbus.ready.00000000000000bb.1".utf8) + [0]), wallClock: 0)
        _ = machine.received(subscribe(presence(0xbb, "orders.>")), wallClock: 0)
        _ = machine.received(subscribe(Array("\u{0}nbus.presence.zz".utf8)), wallClock: 0)
        _ = machine.received([7, 1, 2], wallClock: 0)
        _ = machine.received([], wallClock: 0)
        #expect(machine.view.prefixes.isEmpty)
        #expect(machine.endOfRead() == [.subscribersChanged])
    }

    @Test("Forged presence counts nobody: an announced subscriber counts only while a covering data prefix is there")
    func forgedPresence() {
        var machine = PublisherStateMachine(publisherID: me)
        _ = machine.received(subscribe(presence(0xbb, "orders.>")), wallClock: 0)
        #expect(machine.subscriberCount(matching: name("orders.created")) == 0)
        _ = machine.received(subscribe(Array("orders.".utf8)), wallClock: 0)
        _ = machine.received(subscribe(presence(0xcc, "orders.>")), wallClock: 0)
        #expect(machine.subscriberCount(matching: name("orders.created")) == 2)
        _ = machine.received(unsubscribe(Array("orders.".utf8)), wallClock: 0)
        #expect(machine.subscriberCount(matching: name("orders.created")) == 0)
    }

    @Test("Exactly subscribed: the name's own topic, at the XPUB or looped back; a covering prefix is not it")
    func exactlySubscribed() {
        var machine = PublisherStateMachine(publisherID: me)
        let inbox = name("_inbox.00000000000000bb.1")
        _ = machine.received(subscribe([]), wallClock: 0)
        _ = machine.received(subscribe(Array("_inbox.".utf8)), wallClock: 0)
        #expect(!machine.isSubscribed(exactly: inbox))
        #expect(machine.subscriberCount(matching: inbox) == 1, "covered all the same")
        _ = machine.received(subscribe(Array("_inbox.00000000000000bb.1".utf8) + [0]), wallClock: 0)
        #expect(machine.isSubscribed(exactly: inbox))
        var looped = PublisherStateMachine(publisherID: me)
        _ = looped.localSubscriptionChanged(
            prefix: Array("_inbox.00000000000000bb.1".utf8) + [0], presenceTopic: presence(me, "_inbox.00000000000000bb.1"),
            subscribed: true)
        #expect(looped.isSubscribed(exactly: inbox))
    }

    @Test("A subscriber's own prefix is not a foreign subscriber of names its pattern does not match")
    func ownPrefixIsNotForeign() {
        var machine = PublisherStateMachine(publisherID: me)
        // orders.*.eu subscribes the prefix orders., which covers orders.shipped.
        _ = machine.received(subscribe(Array("orders.".utf8)), wallClock: 0)
        _ = machine.received(subscribe(presence(0xbb, "orders.*.eu")), wallClock: 0)
        #expect(machine.subscriberCount(matching: name("orders.shipped")) == 0)
        #expect(machine.subscriberCount(matching: name("orders.new.eu")) == 1)
        // A foreign SUB on the same prefix (no presence) is "at least one".
        var foreign = PublisherStateMachine(publisherID: me)
        _ = foreign.received(subscribe(Array("orders.".utf8)), wallClock: 0)
        #expect(foreign.subscriberCount(matching: name("orders.shipped")) == 1)
    }

    @Test("A lost connection's subscribers are waited for at close, whichever is read first; one that left on its own is not")
    func vanishedSubscribers() throws {
        let second: UInt64 = 1_000_000_000
        var machine = PublisherStateMachine(publisherID: me)
        _ = machine.received(subscribe(Array("orders.".utf8)), wallClock: 0)
        for bus: UInt64 in [0xbb, 0xcc, 0xdd] { _ = machine.received(subscribe(presence(bus, "orders.>")), wallClock: 0) }

        // 0xdd leaves on its own: no connection was lost near then.
        _ = machine.received(unsubscribe(presence(0xdd, "orders.>")), wallClock: 1 * second)
        // The broker dies: 0xbb's unsubscription is read before the monitor's event, 0xcc's after.
        _ = machine.received(unsubscribe(presence(0xbb, "orders.>")), wallClock: 10 * second)
        machine.connectionLost(wallClock: 10 * second + 5_000_000)
        _ = machine.received(unsubscribe(presence(0xcc, "orders.>")), wallClock: 10 * second + 9_000_000)
        #expect(machine.awaitingAcknowledgement.isEmpty)
        #expect(machine.vanished == [0xbb, 0xcc])
        #expect(machine.expectedAtClose == [0xbb, 0xcc])

        // 0xbb comes back through the next broker and acknowledges: only 0xcc is still awaited.
        _ = machine.received(subscribe(presence(0xbb, "orders.>")), wallClock: 11 * second)
        #expect(machine.vanished == [0xcc] && machine.expectedAtClose == [0xbb, 0xcc])
        _ = machine.received(subscribe(ControlNames.endOfStreamAcknowledgement(publisher: me, subscriber: 0xbb)), wallClock: 12 * second)
        #expect(machine.expectedAtClose == [0xcc])

        // Long after the loss, a departure is a subscriber leaving, not one taken away.
        _ = machine.received(unsubscribe(presence(0xbb, "orders.>")), wallClock: 30 * second)
        #expect(machine.vanished == [0xcc])
    }

    @Test("End of stream: acknowledgements to this publisher count, to another or from itself do not")
    func endOfStreamAcknowledgements() throws {
        var machine = PublisherStateMachine(publisherID: me)
        _ = machine.received(subscribe(Array("orders.".utf8)), wallClock: 0)
        _ = machine.received(subscribe(presence(0xbb, "orders.>")), wallClock: 0)
        _ = machine.received(subscribe(presence(0xcc, "orders.>")), wallClock: 0)
        _ = machine.received(subscribe(presence(me, "orders.>")), wallClock: 0)
        #expect(machine.awaitingAcknowledgement == [0xbb, 0xcc], "never waits for itself")
        _ = machine.received(subscribe(ControlNames.endOfStreamAcknowledgement(publisher: 0xdd, subscriber: 0xbb)), wallClock: 0)
        #expect(machine.awaitingAcknowledgement == [0xbb, 0xcc])
        _ = machine.received(subscribe(ControlNames.endOfStreamAcknowledgement(publisher: me, subscriber: 0xbb)), wallClock: 0)
        #expect(machine.awaitingAcknowledgement == [0xcc])
        let frames = machine.endOfStreamFrames(sequences: [name("orders.created"): 41], wallClock: 9)
        #expect(frames.count == 1)
        let record = try EnvelopeCodec.decode(frame: try #require(frames.first))
        #expect(record.headers["final"] == "1" && record.publisherID == me)
        #expect(EndOfStream.entries(in: record.payload).map { "\($0.0)=\($0.1)" } == ["orders.created=41"])
        #expect(machine.endOfStreamFrames(sequences: [:], wallClock: 9).isEmpty, "nothing posted, nothing to end")
    }

    @Test("Looped back, the bus's own subscriptions count as its XPUB would have reported them")
    func loopbackSubscriptions() {
        var machine = PublisherStateMachine(publisherID: me)
        let prefix = pattern("orders.>").subscriptionPrefix
        #expect(
            machine.localSubscriptionChanged(prefix: prefix, presenceTopic: presence(me, "orders.>"), subscribed: true)
                == [.subscribersChanged])
        #expect(machine.subscriberCount(matching: name("orders.created")) == 1)
        _ = machine.localSubscriptionChanged(prefix: prefix, presenceTopic: presence(me, "orders.>"), subscribed: false)
        #expect(machine.subscriberCount(matching: name("orders.created")) == 0)
    }
}

@Suite("SubscriberTopics: what the SUB socket subscribes, in order, counted per subscription")
struct SubscriberTopicsTests {
    private let me: UInt64 = 0xaa

    @Test("The first subscription subscribes the data prefix then presence; the last takes presence then the prefix")
    func order() {
        var topics = SubscriberTopics(busID: me, loopback: false)
        let p = pattern("orders.>")
        let presence = ControlNames.presenceTopic(bus: me, pattern: p)
        #expect(topics.add(p) == [.subscribe(p.subscriptionPrefix), .subscribe(presence)])
        #expect(topics.add(p) == [], "a second subscription to the same pattern changes nothing on the wire")
        #expect(topics.remove(p) == [])
        #expect(topics.remove(p) == [.unsubscribe(presence), .unsubscribe(p.subscriptionPrefix)])
        #expect(topics.prefixCounts.isEmpty && topics.presenceCounts.isEmpty)
    }

    @Test("Patterns that share a data prefix share its subscription, each with its own presence")
    func sharedPrefix() {
        var topics = SubscriberTopics(busID: me, loopback: false)
        let eu = pattern("orders.*.eu")
        let all = pattern("orders.>")
        #expect(eu.subscriptionPrefix == all.subscriptionPrefix)
        #expect(topics.add(eu).count == 2)
        #expect(topics.add(all) == [.subscribe(ControlNames.presenceTopic(bus: me, pattern: all))])
        #expect(topics.remove(eu) == [.unsubscribe(ControlNames.presenceTopic(bus: me, pattern: eu))])
        #expect(topics.remove(all).last == .unsubscribe(all.subscriptionPrefix))
    }

    @Test("Looped back: the own publisher hears of each pattern once, and every removal releases local interest")
    func loopback() {
        var topics = SubscriberTopics(busID: me, loopback: true)
        let p = pattern("orders.created")
        let presence = ControlNames.presenceTopic(bus: me, pattern: p)
        #expect(
            topics.add(p)
                == [.subscribe(p.subscriptionPrefix), .subscribe(presence),
                    .localSubscription(prefix: p.subscriptionPrefix, presenceTopic: presence, subscribed: true)])
        #expect(topics.add(p) == [])
        #expect(topics.remove(p) == [.releaseLocalInterest(p.subscriptionPrefix)])
        #expect(
            topics.remove(p)
                == [.releaseLocalInterest(p.subscriptionPrefix), .unsubscribe(presence),
                    .localSubscription(prefix: p.subscriptionPrefix, presenceTopic: presence, subscribed: false),
                    .unsubscribe(p.subscriptionPrefix)])
    }

    @Test("An end of stream is acknowledged by subscribing and unsubscribing its topic at once")
    func acknowledgement() {
        let topics = SubscriberTopics(busID: me, loopback: false)
        let topic = ControlNames.endOfStreamAcknowledgement(publisher: 0xbb, subscriber: me)
        #expect(topics.acknowledgeEndOfStream(publisher: 0xbb) == [.subscribe(topic), .unsubscribe(topic)])
        #expect(ControlTopic(topic[...]) == .endOfStreamAcknowledgement(publisher: 0xbb, subscriber: me))
    }
}

@Suite("Loopback delivery and pausing reading, without sockets", .timeLimit(.minutes(1)))
struct ReceiverFlowTests {
    private func encoded(_ text: String, sequence: UInt64) throws -> [UInt8] {
        try EnvelopeCodec.encode(BusNotification(name: name(text), sequence: sequence, publisherID: 0xbb, timestamp: 1))
    }

    @Test("A full suspendProducer subscription pauses reading; draining it lifts the pause")
    func pauseAndResume() async throws {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 16)
        let storage = SubscriptionStorage(id: 1, pattern: pattern("orders.>"), policy: .suspendProducer(capacity: 2), core: core)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(storage)
        for sequence in 1...2 {
            try encoded("orders.created", sequence: UInt64(sequence)).withUnsafeBytes { receiver.deliverLocally($0) }
        }
        let pause = receiver.flush()
        #expect(pause, "two buffered reach the capacity: the loop must stop reading")
        #expect(receiver.wantsProducerPaused)
        var events = EventQueue()
        #expect(await storage.refill(&events))
        #expect(!receiver.wantsProducerPaused, "the consumer took the batch: reading resumes")
        #expect(receiver.counters.framesReceived == 2)
    }

    @Test("A frame no pattern takes is unmatched (the one its prefix let in is also filteredOut there), a gap is counted")
    func routing() throws {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 16)
        let storage = SubscriptionStorage(id: 1, pattern: pattern("orders.*.eu"), policy: .default, core: core)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(storage)
        for (text, sequence) in [("orders.new.eu", 1), ("orders.new.us", 1), ("audit.x", 1), ("orders.new.eu", 3)] {
            try encoded(text, sequence: UInt64(sequence)).withUnsafeBytes { receiver.deliverLocally($0) }
        }
        _ = receiver.flush()
        #expect(receiver.counters.unmatched == 2, "orders.new.us and audit.x")
        #expect(receiver.counters.lostUpstream == 1, "sequence 2 of orders.new.eu never came")
        #expect(storage.stats.filteredOut == 1)
    }
}
