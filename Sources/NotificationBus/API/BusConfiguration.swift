import Logging
/// Everything a `Bus` needs: where its publisher and subscriber sockets attach, and its limits.
///
/// The three topologies are shorthands over `publish` and `subscribe`:
/// embedded (one process, `inproc://`), direct (the publisher binds, subscribers connect) and
/// brokered (both connect to `nbus broker`).
public struct BusConfiguration: Sendable {
    /// Where the publishing XPUB socket attaches; empty means this bus cannot post.
    public var publish: [Attachment]
    /// Where the subscribing SUB socket attaches; empty means this bus cannot subscribe.
    public var subscribe: [Attachment]
    /// ZeroMQ send high-water mark per peer (messages). PUB-style sockets drop beyond it unless
    /// `publisherBackpressure` is on; subscribers see the drops as upstream gaps.
    ///
    /// Unless set: a publisher that does not wait keeps 10,000 (a binding one follows
    /// `subscriberBudget` instead, a mark in bytes); a publisher that waits
    /// (`publisherBackpressure`) keeps 10,000 frames of 4 KiB, 1,000 with every attachment tcp,
    /// converted to the batch frames it builds: 1,250 and 125 of the default 32 KiB (40 MiB and
    /// 4 MiB), so a faster publisher's backlog waits in `post` (bounded by `outboundCapacity`)
    /// instead of as tens of megabytes of batch frames in ZeroMQ's queue. Only a waiting
    /// publisher's mark is converted: there it bounds memory, not loss; one that does not wait
    /// drops past its mark, and a lone post is a frame of its own, so fewer frames would lose
    /// sparse traffic sooner. Set, it is the mark, budget or not.
    public var sendHighWaterMark: Int32 {
        get {
            sendHighWaterMarkSetting
                ?? (publisherBackpressure ? defaultSendMark(frames: publishesOverTCPOnly ? 1_000 : 10_000) : 10_000)
        }
        set { sendHighWaterMarkSetting = newValue }
    }
    private var sendHighWaterMarkSetting: Int32?
    /// `frames` of 4 KiB in the batch frames this bus builds: the same bytes queued in ZeroMQ
    /// whatever `batching` says (32 KiB frames made the 1,000-frame mark 32 MB of a publisher's
    /// private memory), from 64 frames up to `frames` (batching off: `frames`).
    private func defaultSendMark(frames: Int32) -> Int32 {
        let frameBytes = batching.maximumFrameBytes
        guard frameBytes > 4 * 1024 else { return frames }
        return Int32(max(64, min(Int(frames), Int(frames) * 4 * 1024 / frameBytes)))
    }
    /// ZeroMQ receive high-water mark per connection (messages; a message may be a batch frame,
    /// 32 KiB by default). Full, the subscriber stops reading the connection: over tcp the sender's queue
    /// (a broker's or a binding publisher's, with their budgets) takes the back-pressure, and
    /// nothing is lost.
    ///
    /// Unless set, when every `subscribe` attachment is tcp: as many of the largest frames
    /// `maximumPayload` allows as fit in `subscriptionBufferBytes`, from 64 to 1,000 (64 with the
    /// defaults: at most 64 MiB of 1 MiB notifications, or 2 MiB of 32 KiB batch frames, held
    /// by libzmq per connection while the consumer is paused; a mark of 1,000 let 1,000
    /// notifications of 1 MiB take 1 GB, issue 38 item 8); 1,000 with no byte bound. Else
    /// 10,000 (up to 320 MiB of full 32 KiB batch frames while the consumer is paused; over ipc, a 1,000-frame mark made a raw publisher's closing burst lose its tail:
    /// libzmq drops what it had not read from a peer that closed, see `docs/deployment.md`).
    public var receiveHighWaterMark: Int32 {
        get { receiveHighWaterMarkSetting ?? (subscribesOverTCPOnly ? byteBoundedReceiveMark : 10_000) }
        set { receiveHighWaterMarkSetting = newValue }
    }
    /// The tcp default of `receiveHighWaterMark`: the frames of `maximumPayload` that fit in
    /// `subscriptionBufferBytes`, 64 to 1,000.
    private var byteBoundedReceiveMark: Int32 {
        guard subscriptionBufferBytes > 0 else { return 1_000 }
        let frame = WireFormat.largestFrame(maximumPayload: max(0, maximumPayload))
        return Int32(min(1_000, max(64, subscriptionBufferBytes / max(1, frame))))
    }
    private var receiveHighWaterMarkSetting: Int32?
    /// Whether every `subscribe` attachment is tcp (none when there are none).
    private var subscribesOverTCPOnly: Bool {
        !subscribe.isEmpty && subscribe.allSatisfy { $0.endpoint.lowercased().hasPrefix("tcp://") }
    }
    /// Whether every `publish` attachment is tcp (none when there are none).
    private var publishesOverTCPOnly: Bool {
        !publish.isEmpty && publish.allSatisfy { $0.endpoint.lowercased().hasPrefix("tcp://") }
    }
    /// With `true`, a full peer makes the I/O thread wait (`ZMQ_XPUB_NODROP`) instead of dropping,
    /// and `post` waits in turn once `outboundCapacity` is queued: lossless, but one slow peer
    /// slows the publisher.
    ///
    /// Unless set, it is on when every `publish` attachment connects (the brokered topology: the
    /// publisher's only peers are brokers, which never make it wait for a slow subscriber, so
    /// waiting for them costs nobody else) and off when the publisher binds (its peers are the
    /// subscribers themselves, and one slow subscriber must not slow the others: it keeps each
    /// one's `subscriberBudget` instead, as the broker does, waiting only for one past its budget
    /// that is slow but moving). A publisher that
    /// connects to subscribers that bind (collectors, fan-in) waits for the slowest of them too:
    /// set it to `false` there.
    public var publisherBackpressure: Bool {
        get { publisherBackpressureSetting ?? publishesToBrokersOnly }
        set { publisherBackpressureSetting = newValue }
    }
    private var publisherBackpressureSetting: Bool?
    /// How long what the publishing socket sent may stay unacknowledged, or a peer's receive
    /// window stay closed, before that connection is dropped (TCP `TCP_USER_TIMEOUT`; zero: no
    /// limit, the kernel's retransmission timeout of about 15 minutes, and none for a closed
    /// window). A connecting publisher redials, and what it posts meanwhile reaches nobody
    /// (subscribers count it as upstream gaps), instead of waiting for a frozen or vanished broker
    /// for as long as that lasts. On tcp connections only.
    ///
    /// Unless set, it is 60 s when every `publish` attachment connects (a broker closes its window
    /// only briefly: past its `slowSubscriberPatience` it sends past a full subscriber) and zero
    /// when the publisher binds (its peers are subscribers, and a paused one closes its window for
    /// as long as it pauses: it must not be cut off). A publisher that connects to subscribers that
    /// bind (fan-in) cuts one off once its window stayed closed this long; set zero to wait instead.
    public var sendStallLimit: Duration {
        get { sendStallLimitSetting ?? (publishesToBrokersOnly ? Self.defaultSendStallLimit : .zero) }
        set { sendStallLimitSetting = newValue }
    }
    private var sendStallLimitSetting: Duration?
    /// Every `publish` attachment connects: the brokered shape, where the peers are brokers (the
    /// defaults of `publisherBackpressure` and `sendStallLimit` follow it).
    private var publishesToBrokersOnly: Bool { !publish.isEmpty && publish.allSatisfy { !$0.isBind } }
    /// `sendStallLimit` for a publisher that only connects, unless set.
    public static let defaultSendStallLimit: Duration = .seconds(60)
    /// The longest `sendStallLimit` (TCP_USER_TIMEOUT counts milliseconds in an int).
    public static let maximumSendStallLimit: Duration = .seconds(86_400)
    /// For a publisher that binds and does not wait for ever (`publisherBackpressure` off, the
    /// direct topology): the bytes one subscriber may fall behind before it costs anybody else
    /// anything (64 MiB, as `BrokerConfiguration.subscriberBudget`, and kept the same way). The
    /// publishing socket's mark in messages is the budget over a 256-byte frame plus libzmq's
    /// 128 bytes per message (174,762 for 64 MiB), instead of `sendHighWaterMark`.
    ///
    /// Over ipc and tcp, where the publisher sees each subscriber's connection: within its budget
    /// a subscriber that pauses loses nothing and nobody waits for it. One that takes nothing for
    /// `subscriberPatience` (0.5 s) while more than its budget is sent is disconnected (counted in
    /// `BusStats.stalledSubscribersDisconnected`, logged as a warning); it reconnects by itself
    /// and counts what it missed as a gap, and this publisher's close waits for it to come back
    /// (up to `closeTimeout`) to tell it its tail. One that is slow but moving falls behind until
    /// the publisher holds its budget in bytes for it (or its queue reaches the mark), and then
    /// the publisher waits for it, sending nothing new until it is back within (`post` suspends
    /// once `outboundCapacity` is queued: flow control, it loses nothing; counted in
    /// `BusStats.subscriberWaits`); past its budget for 10 s in a row it is disconnected
    /// (`BusStats.slowSubscribersDisconnected`), and at the mark for 10 s frames go past it
    /// (`BusStats.sentPastSlowSubscribers`). Memory: about the budget per subscriber, stopped or
    /// moving.
    ///
    /// Over inproc alone (no connection to watch) the mark is applied and the publisher drops for
    /// a full subscriber at it. Zero, or a `sendHighWaterMark` set explicitly: the mark is
    /// `sendHighWaterMark` and a full subscriber loses what does not fit (unless
    /// `publisherBackpressure`). A publisher that waits (connected to brokers) keeps
    /// `sendHighWaterMark`.
    public var subscriberBudget = BrokerConfiguration.defaultSubscriberBudget
    /// Whether `subscriberBudget` sets the publishing socket's mark.
    var publisherUsesBudget: Bool {
        sendHighWaterMarkSetting == nil && subscriberBudget > 0 && !publisherBackpressure && publish.contains { $0.isBind }
    }
    /// Whether the publisher keeps `subscriberBudget` as the broker does (`SubscriberBudgetPolicy`):
    /// it uses the budget, only binds, some of it over ipc or tcp (connections it can see), and
    /// does not deliver to itself. Its socket then sends with `ZMQ_XPUB_NODROP`.
    var publisherWatchesSubscribers: Bool {
        publisherUsesBudget && publish.allSatisfy(\.isBind) && !deliversToItself
            && publish.contains { !$0.endpoint.lowercased().hasPrefix("inproc://") }
    }
    /// How long a subscriber past its budget may take nothing before a binding publisher
    /// disconnects it, and how long one at its mark is waited for before the publisher looks at
    /// who took nothing (`BrokerConfiguration.slowSubscriberPatience`'s default).
    public static let subscriberPatience: Duration = .milliseconds(500)
    /// Posts queued for the I/O thread before `post` suspends (async) or throws (sync).
    public var outboundCapacity = 16_384
    /// Whether posts of one name queued one after the other go out as one batch frame (NBP-1
    /// §2.3). On by default; it never waits to fill a batch (see `Batching`). `.off` sends every
    /// post as its own frame, for receivers written before batch frames.
    public var batching: Batching = .on
    /// Largest payload accepted, both when posting and when receiving (NBP/1 `payloadTooLarge`).
    public var maximumPayload = WireFormat.defaultMaximumPayload
    /// Most headers a received notification may carry: at most NBP/1's 32, lower to refuse more
    /// (counted as `headerLimitExceeded`). Posting is held to NBP/1's limits only.
    public var maximumHeaderCount = WireFormat.maximumHeaderCount
    /// Most (publisher, name) streams a subscriber tracks sequence numbers for. A publisher that
    /// closes sends an end-of-stream record and its streams are forgotten; one that crashes does
    /// not, so without a bound a long-lived subscriber of restarting publishers grows forever.
    /// Beyond it the least recently heard streams are forgotten (a tenth at a time) and counted in
    /// `BusStats.streamsForgotten`: such a stream's next notification starts tracking afresh, so a
    /// loss just before it would go undetected. About 100 bytes each.
    public var maximumTrackedStreams = BusConfiguration.defaultMaximumTrackedStreams
    /// `maximumTrackedStreams` unless set: 100,000 (about 10 MB at most).
    public static let defaultMaximumTrackedStreams = 100_000
    /// The most names whose retained value (NBP-1 §18) this bus keeps of its own retained posts,
    /// when it keeps them: a publisher that binds (for the subscribers connected straight to it)
    /// and an embedded bus. Past it, or past `retainedBytes`, the value updated longest ago is
    /// evicted, counted in `BusStats.ownRetainedEvictions` and, the first time, logged as a
    /// warning. 1 to 10 million; 10,000 unless set.
    public var retainedNames = BusConfiguration.defaultRetainedNames
    /// The most bytes of those values (their encoded frames): 1 byte to 64 GiB; 16 MiB unless set.
    public var retainedBytes = BusConfiguration.defaultRetainedBytes
    /// The most bytes of notifications one subscription buffers for its consumer before its
    /// `BufferingPolicy` applies, as well as the policy's count: a consumer that stops holds at
    /// most this much per subscription (plus one batch from the I/O thread and one it took),
    /// however large the notifications (issue 38 item 8: 1,000 notifications of 1 MiB fit the
    /// 8,192 count and took 1 GB). A notification counts its payload, headers and name plus 64
    /// bytes. One larger than the bound still passes alone. 0: no byte bound. 64 MiB unless set,
    /// as the broker's `subscriberBudget`. A typed post of this bus handed to its own typed
    /// subscription as the value (no payload) counts only its name and the 64 bytes: its size is
    /// the application's, which the count bound covers.
    public var subscriptionBufferBytes = BusConfiguration.defaultSubscriptionBufferBytes
    /// `subscriptionBufferBytes` unless set: 64 MiB.
    public static let defaultSubscriptionBufferBytes = 64 << 20
    /// The kernel's receive buffer of each subscribing connection, in bytes (`ZMQ_RCVBUF`, which
    /// sets `SO_RCVBUF`; Linux doubles it and stops tuning it). nil: the system's, which Linux
    /// grows with the traffic (here up to 1 MB and more for one connection).
    ///
    /// Set it for a subscriber slower than its publisher behind a broker with a
    /// `subscriberBudget`: a kernel buffer of a megabyte fills while the consumer is behind, and
    /// the broker, seeing no TCP progress for its patience, cuts the subscriber as stalled
    /// although it is taking notifications. A consumer at 5,000 a second behind a 1 MiB budget,
    /// both cores loaded, was cut in 1 run of 9 with 128 KiB, in 4 of 5 without: less often, not
    /// never (docs/deployment.md). Its cost: one connection moves at most about this many bytes per
    /// round trip (nothing on a LAN, a limit over a long link). 1 KiB to 1 GiB.
    public var receiveBufferBytes: Int? = nil
    /// `retainedNames` unless set: 10,000.
    public static let defaultRetainedNames = 10_000
    /// `retainedBytes` unless set: 16 MiB.
    public static let defaultRetainedBytes = 16 << 20
    /// CURVE for the sockets that connect (to `nbus broker` or a binding peer); nil is plaintext.
    /// Has no effect on `inproc://`, which has no handshake.
    public var curve: CurveClientSecurity?
    /// CURVE for the sockets that bind (direct topology); nil is plaintext. A socket that both binds
    /// and connects cannot use CURVE (the server role is per socket): opening such a bus throws.
    public var curveServer: CurveServerSecurity?
    /// Spans and W3C trace headers (`BusTracing`): by default the tracer bootstrapped in
    /// `InstrumentationSystem` when the bus opens; none bootstrapped costs nothing.
    public var tracing: BusTracing = .bootstrapped
    /// How long `close()` keeps trying to hand queued posts to ZeroMQ and ZeroMQ to send them, and
    /// waits for subscribers to acknowledge the end of stream.
    public var closeTimeout: Duration = .seconds(2)
    /// Latency against CPU: after doing work, the I/O thread keeps looking for more for this long
    /// (yielding the core between looks) before it sleeps, and a consumer with nothing buffered
    /// looks as long before it suspends, so a message arriving meanwhile needs no wake-up. Zero (the
    /// default) sleeps at once; a few hundred microseconds cut publish-to-delivery latency at
    /// moderate rates, at the cost of cores kept busy while traffic flows (a waiting consumer holds
    /// one of Swift's cooperative threads while it looks). At most 10 s.
    public var idleSpin: Duration = .zero
    /// How a peer that went away without closing its connection is noticed (a host that lost
    /// power or its network, a NAT or firewall that silently dropped the flow): TCP keepalive on
    /// both sockets' tcp connections (zero: off), in whole seconds rounded up. A connection idle
    /// this long is probed, then again at this interval; one whose peer answers none for
    /// `heartbeatTimeout` is dropped and redialled, and a publisher stops counting that peer's
    /// subscribers. A frozen process on a live host is not noticed by the probes (its kernel
    /// answers); a publisher notices a frozen broker it is sending to by `sendStallLimit`. ZMTP
    /// heartbeats would notice it, but libzmq aborts a process that combines them with
    /// back-pressure (see `ConnectionKeepalive`).
    public var heartbeatInterval: Duration = .seconds(5)
    /// How long keepalive probes may go unanswered before the connection is dropped.
    public var heartbeatTimeout: Duration = .seconds(15)

    /// With several brokers (`publish` connects to more than one endpoint): how long one of them
    /// may refuse what this publisher sends (frozen, or its host gone without a reset) before the
    /// publisher stops waiting for it and sends on through the others. What that broker misses
    /// meanwhile is counted in `BusStats.pathDrops` (its subscribers get it through the others);
    /// it is sent to again as soon as it takes sends. Never the last broker still taking sends:
    /// that one is waited for as with one broker (`sendStallLimit`). Zero to 10 minutes. While
    /// the bus closes, the limit is at most a quarter of `closeTimeout` (whatever is set here), so
    /// the tail goes through the others within it; a broker given up on then keeps what it took
    /// only for the rest of the close timeout.
    ///
    /// Longer than a broker holds a slow but moving subscriber (10 s, then it sends past it): a
    /// broker that applies flow control for a slow subscriber takes nothing meanwhile too, and
    /// giving up on it then would leave the other broker alone with the same slow subscriber.
    public var pathStallLimit: Duration = BusConfiguration.defaultPathStallLimit
    /// `pathStallLimit` unless set: 15 s.
    public static let defaultPathStallLimit: Duration = .seconds(15)
    /// With several brokers (`subscribe` connects to more than one endpoint): how long a
    /// notification that arrived past a hole is held back while another broker, still connected
    /// and behind, may bring what is missing (NBP-1 §17). A hole no connected broker can fill is a
    /// gap at once. Zero to 10 minutes. At most 65,536 notifications are held per stream: past
    /// that the newest are let go, to be brought again by the path still behind (or counted as
    /// lost if none does).
    ///
    /// As long as `pathStallLimit`: one broker can be that far behind the other (holding a slow
    /// subscriber, or frozen) and still bring what the other lost.
    public var pathGapTimeout: Duration = BusConfiguration.defaultPathGapTimeout
    /// `pathGapTimeout` unless set: 15 s.
    public static let defaultPathGapTimeout: Duration = .seconds(15)

    /// The publishing sockets: one per broker when every `publish` attachment connects and there
    /// are several (NBP-1 §17: each broker gets every notification, and one that stalls is given
    /// up on alone); otherwise one socket for every attachment.
    var publisherPaths: Int {
        publish.count > 1 && publishesToBrokersOnly ? publish.count : 1
    }

    /// The subscribing sockets: one per endpoint when every `subscribe` attachment connects and
    /// there are several, so the bus knows which path brought what and discards the later copies
    /// (NBP-1 §17); otherwise one socket for every attachment.
    var subscriberPaths: Int {
        subscribe.count > 1 && subscribe.allSatisfy({ !$0.isBind }) && !deliversToItself ? subscribe.count : 1
    }

    /// The longest heartbeat interval or timeout (the range ZMTP heartbeats took, kept for compatibility).
    public static let maximumHeartbeat: Duration = .milliseconds(6_553_000)

    /// The spans of time in the units libzmq and the clocks take (0 for negative ones, which
    /// `validate()` refuses anyway).
    package var closeTimeoutInMilliseconds: Int32 { Int32(clamping: Timestamps.boundedMilliseconds(closeTimeout)) }
    package var idleSpinInNanoseconds: UInt64 { Timestamps.boundedNanoseconds(idleSpin) }
    package var heartbeatIntervalInMilliseconds: Int32 { Int32(clamping: Timestamps.boundedMilliseconds(heartbeatInterval)) }
    package var heartbeatTimeoutInMilliseconds: Int32 { Int32(clamping: Timestamps.boundedMilliseconds(heartbeatTimeout)) }

    /// Throws `.invalidConfiguration` naming the first value out of range (`Bus.init` calls it).
    public func validate() throws(BusError) {
        func check(_ ok: Bool, _ text: @autoclosure () -> String) throws(BusError) {
            if !ok { throw .invalidConfiguration(text()) }
        }
        try check(sendHighWaterMark >= 0, "sendHighWaterMark must be 0 (no limit) or more, not \(sendHighWaterMark)")
        try check(subscriberBudget >= 0, "subscriberBudget must be 0 (none) or more bytes, not \(subscriberBudget)")
        try check(receiveHighWaterMark >= 0, "receiveHighWaterMark must be 0 (no limit) or more, not \(receiveHighWaterMark)")
        try check(
            subscriptionBufferBytes >= 0,
            "subscriptionBufferBytes must be 0 (no byte bound) or more bytes, not \(subscriptionBufferBytes)")
        if let receiveBufferBytes {
            try check(
                (1_024...(1 << 30)).contains(receiveBufferBytes),
                "receiveBufferBytes must be 1 KiB to 1 GiB (nil: the system's), not \(receiveBufferBytes)")
        }
        try check(outboundCapacity >= 1, "outboundCapacity must be at least 1, not \(outboundCapacity)")
        try check(maximumPayload >= 0, "maximumPayload must be 0 or more, not \(maximumPayload)")
        try check(
            (0...WireFormat.maximumHeaderCount).contains(maximumHeaderCount),
            "maximumHeaderCount must be 0...\(WireFormat.maximumHeaderCount) (NBP/1's limit), not \(maximumHeaderCount)")
        try check(maximumTrackedStreams >= 2, "maximumTrackedStreams must be at least 2, not \(maximumTrackedStreams)")
        try check(
            (1...BrokerConfiguration.maximumRetainedNames).contains(retainedNames),
            "retainedNames must be 1 to \(BrokerConfiguration.maximumRetainedNames), not \(retainedNames)")
        try check(
            (1...BrokerConfiguration.maximumRetainedBytes).contains(retainedBytes),
            "retainedBytes must be 1 byte to 64 GiB, not \(retainedBytes)")
        // NBP-1 §2.3: a producer cannot know its receivers' maximum payloads, so its batches stay
        // within the one bound every receiver accepts.
        try check(
            batching.maximumFrameBytes <= WireFormat.maximumBatchFrame,
            "batching.maximumFrameBytes must be at most \(WireFormat.maximumBatchFrame) (NBP-1's largest batch frame), not \(batching.maximumFrameBytes)")
        try check(closeTimeout >= .zero, "closeTimeout must not be negative, not \(closeTimeout)")
        try check(idleSpin >= .zero && idleSpin <= .seconds(10), "idleSpin must be zero to 10 seconds, not \(idleSpin)")
        // The range ZMTP heartbeats took (whole milliseconds, a 16-bit TTL in tenths of a second),
        // kept when TCP keepalive replaced them so that no setting that worked is refused now.
        try check(
            heartbeatInterval == .zero || (heartbeatInterval >= .milliseconds(1) && heartbeatInterval <= Self.maximumHeartbeat),
            "heartbeatInterval must be zero (off) or 1 ms to \(Self.maximumHeartbeat), not \(heartbeatInterval)")
        try check(
            sendStallLimit == .zero || (sendStallLimit >= .milliseconds(1) && sendStallLimit <= Self.maximumSendStallLimit),
            "sendStallLimit must be zero (no limit) or 1 ms to \(Self.maximumSendStallLimit), not \(sendStallLimit)")
        try check(
            pathStallLimit >= .zero && pathStallLimit <= .seconds(600),
            "pathStallLimit must be zero to 10 minutes, not \(pathStallLimit)")
        try check(
            pathGapTimeout >= .zero && pathGapTimeout <= .seconds(600),
            "pathGapTimeout must be zero to 10 minutes, not \(pathGapTimeout)")
        try check(
            publish.count <= 64 && subscribe.count <= 64,
            "at most 64 endpoints to publish to and 64 to subscribe from, not \(publish.count) and \(subscribe.count)")
        try check(
            heartbeatTimeout >= .zero && heartbeatTimeout <= Self.maximumHeartbeat,
            "heartbeatTimeout must be zero to \(Self.maximumHeartbeat), not \(heartbeatTimeout)")
    }

    /// Resident memory (bytes) past which a bus that *binds* drops every connection of its bound
    /// endpoints (it re-binds them; peers reconnect, what was in flight is lost and counted as
    /// gaps), counted in `BusStats.memoryLimitResets`. It is the only bound on what libzmq holds
    /// for a peer that sends a multi-part message and never finishes it (libzmq has no limit on
    /// parts). nil (the default): none; a bus that only connects has no use for it.
    public var maximumResidentMemory: UInt64?

    /// This publisher's NBP/1 id: random and non-zero unless set. With `curve`, the bus replaces
    /// its high 32 bits with the first four bytes of the client's public key (NBP-1 §15.3), so
    /// that a broker with CURVE refuses any other key's frames in its name, across restarts
    /// (`Bus.publisherID` is the id in use).
    public var publisherID: UInt64 = UInt64.random(in: 1...UInt64.max)
    /// Where the bus logs, at debug level, what it does on its own: connections made, accepted and
    /// lost, failed handshakes and rejected frames (repeats at most every 10 s, with counts). nil,
    /// the default: nothing is logged.
    public var logger: Logger?

    /// Whether the subscriber connects to an inproc endpoint this bus's own publisher binds: the
    /// bus then delivers its own posts to its subscriptions directly (loopback), not through ZeroMQ.
    var deliversToItself: Bool {
        let ownEndpoints = Set(publish.compactMap { attachment -> String? in
            guard case .bind(let endpoint) = attachment, endpoint.hasPrefix("inproc://") else { return nil }
            return endpoint
        })
        return subscribe.contains { attachment in
            if case .connect(let endpoint) = attachment { return ownEndpoints.contains(endpoint) }
            return false
        }
    }

    /// A bus with explicit attachments.
    public init(publish: [Attachment] = [], subscribe: [Attachment] = []) {
        self.publish = publish
        self.subscribe = subscribe
    }

    /// One process: the bus publishes to and subscribes from `inproc://name` (the default topology).
    public static func embedded(name: String = "nbus-\(UInt64.random(in: 1...UInt64.max))") -> BusConfiguration {
        let endpoint = "inproc://\(name)"
        return BusConfiguration(publish: [.bind(endpoint)], subscribe: [.connect(endpoint)])
    }

    /// Direct publisher: binds `endpoint` (`ipc://`, `tcp://`) for subscribers to connect to.
    public static func directPublisher(bind endpoint: String) -> BusConfiguration {
        BusConfiguration(publish: [.bind(endpoint)])
    }

    /// Direct subscriber: connects to publishers' endpoints.
    public static func directSubscriber(connect endpoints: [String]) -> BusConfiguration {
        BusConfiguration(subscribe: endpoints.map(Attachment.connect))
    }

    /// Brokered: posts go to the broker's frontend, subscriptions come from its backend.
    public static func brokered(frontend: String, backend: String) -> BusConfiguration {
        BusConfiguration(publish: [.connect(frontend)], subscribe: [.connect(backend)])
    }

    /// Brokered through several brokers at once, for no single point of failure (NBP-1 §17):
    /// every post goes to every broker's frontend (`frontends`), subscriptions come from every
    /// broker's backend (`backends`), and a subscriber hands on the first copy of each
    /// notification and discards the rest. A broker's death then loses nothing while another
    /// is up. `frontends[i]` and `backends[i]` are one broker's; a publisher may pass only
    /// frontends and a subscriber only backends.
    public static func brokered(frontends: [String], backends: [String]) -> BusConfiguration {
        BusConfiguration(publish: frontends.map(Attachment.connect), subscribe: backends.map(Attachment.connect))
    }
}

/// How a publisher merges posts into batch frames (NBP-1 §2.3).
///
/// When the I/O thread takes the queued posts, each run of consecutive posts of one name (up to
/// 1024 of them, and `maximumFrameBytes` in all) becomes one frame. It never holds a post back to
/// fill a batch: a post that finds nothing queued before it goes alone, as soon as it would have
/// without batching. Order is kept, per name and across names (only runs of one name merge).
///
/// Through a broker it about doubled throughput (NBP-1 §10). The price: `sendHighWaterMark` and
/// `receiveHighWaterMark` count frames, so a full queue holds up to a batch's worth of
/// notifications per frame (up to `sendHighWaterMark` × `maximumFrameBytes` bytes): under a
/// sustained overload, notifications wait longer in it. Lower either where that matters.
public struct Batching: Hashable, Sendable, CustomStringConvertible {
    /// The largest batch frame built, in bytes; a post whose frame alone reaches it goes alone.
    /// 0 turns batching off.
    public var maximumFrameBytes: Int

    /// Batching with a frame of at most `maximumFrameBytes` (0 or less: off).
    public init(maximumFrameBytes: Int) {
        self.maximumFrameBytes = max(0, maximumFrameBytes)
    }

    /// The default: frames of at most `WireFormat.defaultMaximumBatchFrame` (32 KiB; why that
    /// size is said there).
    public static let on = Batching(maximumFrameBytes: WireFormat.defaultMaximumBatchFrame)
    /// Every post its own frame (version 1), as before batch frames.
    public static let off = Batching(maximumFrameBytes: 0)

    /// Whether posts are merged at all.
    public var isOn: Bool { maximumFrameBytes > 0 }

    public var description: String { isOn ? "on (frames up to \(maximumFrameBytes) bytes)" : "off" }
}
