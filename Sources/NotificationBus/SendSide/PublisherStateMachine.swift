/// Who is subscribed at this publisher, as seen by its XPUB socket.
struct PublisherView {
    /// Plain ZeroMQ prefixes (from any subscriber, NotificationBus or foreign). XPUB passes the
    /// first subscribe and the last unsubscribe of a prefix, so this is a set.
    var prefixes: Set<[UInt8]> = []
    /// The data prefixes of this bus's own subscriptions when it delivers to itself without ZeroMQ
    /// (loopback: its XPUB never sees them), with how many subscriptions use each.
    var localPrefixes: [[UInt8]: Int] = [:]
    /// NotificationBus subscribers by bus id, with the patterns they announced.
    var presence: [UInt64: [NamePattern: Int]] = [:]
    /// Subscribers (bus ids) that acknowledged this publisher's end of stream.
    var endOfStreamAcknowledged: Set<UInt64> = []
    /// Bus ids whose presence ended, and ones whose presence began, since the state machine last
    /// took them (it times them: see `PublisherStateMachine.vanished`).
    var departedBuses: [UInt64] = []
    var arrivedBuses: [UInt64] = []
    /// This publisher's id, to pick out acknowledgements addressed to it.
    let publisherID: UInt64

    /// Distinct subscribers that will receive `name`: announced buses whose pattern matches, or,
    /// when none announced, 1 if a plain prefix covers it (a foreign subscriber, count unknown).
    /// A prefix an announced pattern subscribes is that bus's, not a foreign subscriber's:
    /// `orders.*.eu` subscribes `orders.`, which covers `orders.shipped` although the pattern does
    /// not match it, and counting it would start a publisher before its real subscriber arrived.
    ///
    /// A presence is a claim any peer can make (a plain SUB can subscribe to presence topics), so
    /// it counts only while a data prefix that covers `name` is subscribed too: announcements
    /// without one never make a publisher send into nothing. Fake announcements beside a real
    /// subscriber can still inflate the count; with CURVE only admitted keys can make them.
    ///
    /// `counting` picks the announced buses that count (all by default; see
    /// `PublisherStateMachine.subscriberCount(matching:joinedOnly:)`); one it leaves out is not
    /// taken for a foreign subscriber either.
    func subscriberCount(matching name: NotificationName, counting: (UInt64) -> Bool = { _ in true }) -> Int {
        let frameStart = Array(name.rawValue.utf8) + [0]
        guard prefixes.contains(where: { frameStart.starts(with: $0) })
            || localPrefixes.keys.contains(where: { frameStart.starts(with: $0) })
        else { return 0 }
        let announced = presence.filter { bus, patterns in counting(bus) && patterns.keys.contains { $0.matches(name) } }.count
        if announced > 0 { return announced }
        let announcedPrefixes = Set(presence.values.flatMap { $0.keys.map(\.subscriptionPrefix) })
        return prefixes.contains { !announcedPrefixes.contains($0) && frameStart.starts(with: $0) } ? 1 : 0
    }

    /// A loopback subscription's data prefix came (`subscribe`) or went.
    mutating func applyLocal(subscribe: Bool, prefix: [UInt8]) {
        let count = (localPrefixes[prefix] ?? 0) + (subscribe ? 1 : -1)
        localPrefixes[prefix] = count > 0 ? count : nil
    }

    /// A subscription message's topic (without its first byte); returns whether the set of plain
    /// prefixes changed.
    @discardableResult
    mutating func apply(subscribe: Bool, topic: ArraySlice<UInt8>) -> Bool {
        switch ControlTopic(topic) {
        case .endOfStreamAcknowledgement(let publisher, let subscriber):
            if subscribe && publisher == publisherID { endOfStreamAcknowledged.insert(subscriber) }
            return false
        case .presence(let bus, let pattern):
            if subscribe {
                if presence[bus] == nil { arrivedBuses.append(bus) }
                presence[bus, default: [:]][pattern, default: 0] += 1
            } else if let index = presence.index(forKey: bus) {
                // Changed in place: a copy out (`if var patterns = presence[bus]`) shared its
                // storage with the dictionary, so each change copied every pattern of that bus,
                // and a subscriber of 20,000 patterns leaving cost its publisher n x n copies
                // (36.8 s of a 20,000-pattern `nbus subscribe` run, issue 38 item 10).
                let left = (presence.values[index][pattern] ?? 1) - 1
                presence.values[index][pattern] = left > 0 ? left : nil
                if presence.values[index].isEmpty {
                    presence.remove(at: index)
                    departedBuses.append(bus)
                }
            }
            return false
        case .malformedControl:
            return false
        case .readyToken, .data:
            // A token's unsubscription arrives here too: it was never a prefix, so nothing changes.
            if subscribe { return prefixes.insert(Array(topic)).inserted }
            return prefixes.remove(Array(topic)) != nil
        }
    }
}

/// The publisher side of a bus: what arrives on its XPUB (subscriptions, presence, readiness
/// tokens, end-of-stream acknowledgements) and what this bus subscribes to itself when looped
/// back, turned into actions: hand prefix changes to posting threads, echo a token, re-check the
/// waits on subscriber counts, send the end of stream. No sockets: the event loop reads the
/// messages and carries out the actions.
struct PublisherStateMachine {
    enum Action: Equatable {
        /// Posting threads must see these prefix changes (`PublisherInterest`), in this order.
        case changeInterest([PrefixChange])
        /// Send this frame on the XPUB: the echo of a readiness token.
        case send([UInt8])
        /// The subscriber counts may have changed: re-check the waits on them.
        case subscribersChanged
    }

    /// One plain prefix subscribed or unsubscribed at the XPUB.
    struct PrefixChange: Equatable {
        let prefix: [UInt8]
        let subscribed: Bool
    }

    private(set) var view: PublisherView
    /// Sequence numbers of this publisher's own control messages (token echoes, end of stream).
    private var controlSequence: UInt64 = 0
    /// Prefix changes read this round and not yet handed to posting threads.
    private var unpublished: [PrefixChange] = []
    private var viewChanged = false

    /// With several paths (one XPUB per broker, NBP-1 §17): the topics each path holds. A
    /// subscriber reaches this publisher through every broker, so the view changes only at a
    /// topic's first subscription over any path and its last unsubscription over all of them:
    /// a broker that dies takes away no subscriber another broker still brings. Empty with one path.
    private var pathTopics: [Set<[UInt8]>]

    /// With several paths: per path, the NotificationBus subscribers (bus ids) whose presence it
    /// brings, with how many presence topics each.
    private var pathBuses: [[UInt64: Int]]

    /// With several paths: subscribers whose presence arrived through some paths but not yet
    /// through all, with when it arrived through the first (wall clock ns). A wait for
    /// subscribers (`subscriberCount(matching:joinedOnly:)`) does not count them yet: a publisher
    /// that started on the first broker's word would send its first notifications through that
    /// broker alone (the others drop what no subscription asks for), and that broker's death
    /// would lose them, although the subscriber is connected to another (NBP-1 §17). Each is
    /// counted once it arrived through every path, or `joinWait` after the first (a subscriber
    /// connected to some brokers only, or a broker down, delays a start by that much at most).
    private var joining: [UInt64: UInt64] = [:]
    /// How long a subscriber present through some paths only is waited for on the others: 1 s,
    /// as a subscriber waits for the start of a stream on its paths (NBP-1 §17).
    static let joinWait: UInt64 = 1_000_000_000

    init(publisherID: UInt64, paths: Int = 1) {
        view = PublisherView(publisherID: publisherID)
        pathTopics = paths > 1 ? Array(repeating: [], count: paths) : []
        pathBuses = paths > 1 ? Array(repeating: [:], count: paths) : []
    }

    /// Whether every NotificationBus subscriber that `path` brings is brought by one of
    /// `carriers` too: only then may the publisher stop waiting for `path` (a broker that was
    /// just restarted takes sends before its subscribers are back, and must not count).
    func subscribersCovered(path: Int, by carriers: [Int]) -> Bool {
        guard pathBuses.indices.contains(path) else { return true }
        return pathBuses[path].keys.allSatisfy { bus in
            carriers.contains { pathBuses.indices.contains($0) && pathBuses[$0][bus] != nil }
        }
    }

    var publisherID: UInt64 { view.publisherID }

    /// `bus`'s presence changed on a path (`arrivedHere`: it came through one more): it joins
    /// (through its first path), has joined (every path: the waits look again), or is gone from
    /// every path. One that joined and then lost a path (a broker died) is not joining again:
    /// it was counted, and stays so while any path brings it.
    private mutating func noteJoining(_ bus: UInt64, arrivedHere: Bool, wallClock: UInt64) {
        let paths = pathBuses.count { $0[bus] != nil }
        if paths == 0 || paths == pathBuses.count {
            if joining.removeValue(forKey: bus) != nil && paths > 0 { viewChanged = true }
        } else if arrivedHere && paths == 1 {
            joining[bus] = wallClock
        }
    }

    /// When the earliest `joinWait` ends (wall clock ns), if a subscriber is joining.
    var nextJoinDeadline: UInt64? { joining.values.min().map { $0 &+ Self.joinWait } }

    /// The clock reads `wallClock`: subscribers joining for `joinWait` count from now on (the
    /// waits look again).
    mutating func joinTick(wallClock: UInt64) -> [Action] {
        guard let deadline = nextJoinDeadline, deadline <= wallClock else { return [] }
        joining = joining.filter { wallClock &- $0.value < Self.joinWait }
        return [.subscribersChanged]
    }

    /// One message read from the XPUB (its first byte 1 subscribes, 0 unsubscribes); `wallClock`
    /// stamps an echo. Prefix changes wait for `endOfRead`, except before an echo: posting
    /// threads must know every subscription that came before the token first.
    mutating func received(_ message: some Collection<UInt8>, path: Int = 0, wallClock: UInt64) -> [Action] {
        guard let first = message.first, first <= 1 else { return [] }
        if pathTopics.indices.contains(path) {
            let topic = Array(message.dropFirst())
            let elsewhere = pathTopics.indices.contains { $0 != path && pathTopics[$0].contains(topic) }
            let changed = first == 1 ? pathTopics[path].insert(topic).inserted : pathTopics[path].remove(topic) != nil
            if changed, case .presence(let bus, _) = ControlTopic(topic[...]) {
                let before = pathBuses[path][bus]
                let count = (before ?? 0) + (first == 1 ? 1 : -1)
                pathBuses[path][bus] = count > 0 ? count : nil
                noteJoining(bus, arrivedHere: before == nil && count > 0, wallClock: wallClock)
            }
            // Another path holds it: for the view, nothing came or went.
            guard changed, !elsewhere else { return [] }
        }
        viewChanged = true
        let topic = ArraySlice(message.dropFirst())
        if first == 1, case .readyToken(let nameBytes) = ControlTopic(topic) {
            var actions = flushInterest()
            if let echo = echo(nameBytes, wallClock: wallClock) { actions.append(.send(echo)) }
            return actions
        }
        if view.apply(subscribe: first == 1, topic: topic) {
            unpublished.append(PrefixChange(prefix: Array(topic), subscribed: first == 1))
        }
        noteArrivalsAndDepartures(wallClock: wallClock)
        return []
    }

    // MARK: Subscribers a lost connection took away

    /// Subscribers a lost connection (a broker that died or restarted) took away and that have not
    /// come back: the end of stream was never theirs to acknowledge, so at close they are waited
    /// for (until the close deadline), and when they come back through the next connection the
    /// repeated record tells them what they lost. Without this a broker that died while posting
    /// went on made a silent loss of everything after it. Bounded: at most `vanishedLimit`.
    private(set) var vanished: Set<UInt64> = []
    /// Presences that ended lately, with when (wall clock ns): a connection lost within
    /// `vanishWindow` of one took that subscriber away, whichever of the two was read first.
    private var recentDepartures: [UInt64: UInt64] = [:]
    private var lastConnectionLoss: UInt64?
    static let vanishWindow: UInt64 = 2_000_000_000
    static let vanishedLimit = 4_096

    /// The connecting publisher lost a connection (its socket monitor said so) at `wallClock`.
    mutating func connectionLost(wallClock: UInt64) {
        lastConnectionLoss = wallClock
        for (bus, departed) in recentDepartures where wallClock &- departed <= Self.vanishWindow { markVanished(bus) }
        recentDepartures.removeAll()
    }

    private mutating func noteArrivalsAndDepartures(wallClock: UInt64) {
        for bus in view.arrivedBuses {
            vanished.remove(bus)
            recentDepartures[bus] = nil
        }
        view.arrivedBuses.removeAll()
        for bus in view.departedBuses where bus != publisherID {
            if let loss = lastConnectionLoss, wallClock &- loss <= Self.vanishWindow {
                markVanished(bus)
            } else {
                recentDepartures[bus] = wallClock
            }
        }
        view.departedBuses.removeAll()
        if recentDepartures.count > Self.vanishedLimit {
            recentDepartures = recentDepartures.filter { wallClock &- $0.value <= Self.vanishWindow }
        }
    }

    /// Whether a presence ended after `wallClock` with no lost connection read yet to explain it.
    func hasUnexplainedDepartures(since wallClock: UInt64) -> Bool {
        recentDepartures.values.contains { $0 >= wallClock }
    }

    private mutating func markVanished(_ bus: UInt64) {
        guard vanished.count < Self.vanishedLimit else { return }
        vanished.insert(bus)
    }

    /// The round's reading is done: what changed goes to posting threads and to the waits.
    mutating func endOfRead() -> [Action] {
        var actions = flushInterest()
        if viewChanged { actions.append(.subscribersChanged) }
        viewChanged = false
        return actions
    }

    /// A subscription of this bus itself, looped back (its XPUB never sees it): `prefix` and the
    /// presence `topic` came or went, as the XPUB would have reported them.
    mutating func localSubscriptionChanged(prefix: [UInt8], presenceTopic: [UInt8], subscribed: Bool) -> [Action] {
        view.applyLocal(subscribe: subscribed, prefix: prefix)
        view.apply(subscribe: subscribed, topic: presenceTopic[...])
        return [.subscribersChanged]
    }

    /// Distinct subscribers that will receive `name` (see `PublisherView.subscriberCount`);
    /// `joinedOnly`: without those still joining (see `joining`), for a wait for at least some.
    func subscriberCount(matching name: NotificationName, joinedOnly: Bool = false) -> Int {
        guard joinedOnly && !joining.isEmpty else { return view.subscriberCount(matching: name) }
        return view.subscriberCount(matching: name) { joining[$0] == nil }
    }

    /// Whether the topic of exactly `name` (its bytes and NUL) is subscribed here, at the XPUB or
    /// looped back: a subscription made for that name arrived, not one that merely covers it.
    func isSubscribed(exactly name: NotificationName) -> Bool {
        let topic = Array(name.rawValue.utf8) + [0]
        return view.prefixes.contains(topic) || view.localPrefixes[topic] != nil
    }

    /// The names this publisher's end of stream closes, once `endOfStreamFrames` made it: from
    /// then on only subscribers with a pattern matching one of them are waited for.
    private var closingNames: [NotificationName]?

    /// The end-of-stream records for `sequences` (last sequence per name), ready to send.
    mutating func endOfStreamFrames(sequences: [NotificationName: UInt64], wallClock: UInt64) -> [[UInt8]] {
        closingNames = Array(sequences.keys)
        guard !sequences.isEmpty,
            let name = try? NotificationName(ControlNames.endOfStreamName(publisher: publisherID))
        else { return [] }  // a hex id always makes a valid name: the `try?` cannot fail
        let payloads = EndOfStream.payloads(for: sequences)
        var frames: [[UInt8]] = []
        for (index, payload) in payloads.enumerated() {
            controlSequence += 1
            let notification = BusNotification(
                name: name, payload: payload, headers: index == payloads.count - 1 ? ["final": "1"] : [:],
                sequence: controlSequence, publisherID: publisherID, timestamp: wallClock)
            // Payloads are at most 64 KiB and the one header is valid: encoding cannot fail.
            if let frame = try? EnvelopeCodec.encode(notification) { frames.append(frame) }
        }
        return frames
    }

    /// NotificationBus subscribers (other than this bus itself) that have not acknowledged the end
    /// of stream; once it is made, only those with a pattern matching a name it closes (NBP-1 §15).
    /// A subscriber no stream of this publisher reaches has nothing queued to lose, and does not
    /// acknowledge: waiting for every present subscriber kept 60 closing requesters re-sending
    /// every 20 ms to each other, and the acknowledgements of all to all (each forwarded by the
    /// broker to every publisher) buried the reply subscriptions behind tens of thousands of
    /// messages (issue 29, item 4).
    var awaitingAcknowledgement: Set<UInt64> {
        var buses = Set(view.presence.keys).subtracting(view.endOfStreamAcknowledged).subtracting([publisherID])
        if let closingNames {
            buses = buses.filter { bus in
                view.presence[bus]?.keys.contains { pattern in closingNames.contains { pattern.matches($0) } } ?? false
            }
        }
        return buses
    }

    /// Subscribers to wait for at close: those present and those a lost connection took away,
    /// less those that acknowledged.
    var expectedAtClose: Set<UInt64> {
        awaitingAcknowledgement.union(vanished).subtracting(view.endOfStreamAcknowledged)
    }

    private mutating func flushInterest() -> [Action] {
        guard !unpublished.isEmpty else { return [] }
        defer { unpublished.removeAll(keepingCapacity: true) }
        return [.changeInterest(unpublished)]
    }

    /// The echo of a readiness token: a notification of that name with no payload.
    private mutating func echo(_ nameBytes: ArraySlice<UInt8>, wallClock: UInt64) -> [UInt8]? {
        // A token that is not a valid name is not one of ours: nothing to echo.
        guard let name = try? NotificationName(String(decoding: nameBytes, as: UTF8.self)) else { return nil }
        controlSequence += 1
        let reply = BusNotification(name: name, sequence: controlSequence, publisherID: publisherID, timestamp: wallClock)
        return try? EnvelopeCodec.encode(reply)  // no headers: cannot fail
    }
}
