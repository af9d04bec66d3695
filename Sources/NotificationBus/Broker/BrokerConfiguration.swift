#if canImport(Glibc)
import Glibc
#endif
import Logging

/// Everything a `Broker` needs: its endpoints, its queues and their budgets, its patience with
/// slow subscribers, its limits, security and logging. One value, validated once
/// (`validate()`, which `Broker.init` calls), shared by `Broker`, its forwarding loop and
/// `nbus broker` (compare nats-server's one `Options` with `validateOptions`).
///
/// ```swift
/// var configuration = BrokerConfiguration(frontend: "tcp://0.0.0.0:5550", backend: "tcp://0.0.0.0:5551")
/// configuration.subscriberBudget = 128 << 20     // bytes a stalled subscriber may fall behind
/// let broker = try Broker(configuration)
/// ```
public struct BrokerConfiguration: Sendable {
    /// Where publishers connect (the XSUB side): `tcp://host:port` (`:*` picks a free port),
    /// `ipc:///path`.
    public var frontend: String
    /// Where subscribers connect (the XPUB side).
    public var backend: String
    /// Other brokers' backends this broker's frontend socket also connects to (a chain): their
    /// notifications arrive as if from a local publisher, and this broker's subscriptions travel up
    /// to them, so filtering still happens at the first publisher. Chains must not form a cycle (a
    /// notification would circle for ever). Does not combine with `security` yet.
    public var upstream: [String] = []

    /// Messages queued per publisher connection (frontend) and subscription messages per
    /// subscriber connection (backend). A publisher whose queue is full waits (it sends with
    /// back-pressure to a broker), so this bounds memory, not loss: about mark × frame size per
    /// publisher.
    public var highWaterMark: Int32 = 10_000

    /// Bytes a subscriber may fall behind before it costs anybody else anything (64 MiB, NATS's
    /// `max_pending`). Within it, a subscriber that pauses (stopped, starved of CPU, in a long
    /// handler) holds up nobody: publishers and the other subscribers go on at full speed, and it
    /// loses nothing however long it pauses. One that takes nothing for `slowSubscriberPatience`
    /// while more than its budget is forwarded is disconnected (`SubscriberStallWatch`; it
    /// reconnects by itself and counts what it missed as a gap), and nobody waits for it.
    ///
    /// libzmq counts its queues in messages, so the broker also sets a per-subscriber high-water
    /// mark once, at start: the budget over a small 256-byte frame plus libzmq's 128 bytes per
    /// message (`SubscriberQueueBudget`, which says why the mark never changes on a running
    /// socket), 174,762 messages for 64 MiB: a burst of small notifications within the budget
    /// never reaches it. A subscriber that keeps taking something but too slowly fills it, and
    /// then the broker waits `slowSubscriberPatience` for room (publishers wait too: flow
    /// control), disconnects it if it took nothing meanwhile, and waits for it while it moves, up
    /// to 10 s, before sending past it. Its queue is then up to mark × its frames (740 MB of full
    /// 4 KiB batches; 5.7 GB of the default 32 KiB ones, past the default `memoryLimit`), which `memoryLimit` bounds (docs/deployment.md gives the resident-memory
    /// formula). Zero: no budget, the queue bounded by `highWaterMark` messages as before this
    /// setting, and nobody disconnected.
    public var subscriberBudget: Int = BrokerConfiguration.defaultSubscriberBudget

    /// How long a subscriber may take nothing while more than its budget goes by before it is
    /// disconnected, and how long one whose queue is full may keep it full before the broker
    /// stops waiting for it (see `subscriberBudget`). Keep it far below the publishers'
    /// `BusConfiguration.sendStallLimit` (60 s): a publisher that the broker holds back that long
    /// drops it and redials. Zero: never wait.
    public var slowSubscriberPatience: Duration = .milliseconds(500)

    /// TCP keepalive on every tcp connection (zero: off), in whole seconds rounded up: a
    /// connection idle this long is probed, then again at this interval, and a peer whose host
    /// answers none of three probes (gone, or behind a NAT that dropped the flow) is dropped with
    /// its subscriptions and queue. A frozen process on a live host is not noticed: its kernel
    /// answers (ZMTP heartbeats would, but libzmq aborts with them; see `ConnectionKeepalive`).
    public var heartbeat: Duration = .seconds(5)

    /// The largest subscription message a subscriber may send (512 to 1,024 bytes); one over it
    /// disconnects the subscriber before it is read, and one longer than the size − 64 is kept but
    /// not forwarded to publishers (counted), so a replay of it (as a ZMTP command, a little
    /// longer) never exceeds what publishers accept.
    public var maximumSubscriptionSize: Int = WireFormat.maximumSubscriptionLength

    /// The largest frame a publisher may send (at least 512 bytes); a publisher that sends more
    /// is disconnected before it is read (it reconnects). The default is twice NBP/1's largest
    /// frame for a 1 MiB payload: publishers configured for larger payloads need a broker with a
    /// larger limit (NBP-1 §6).
    public var maximumFrameSize: Int64 = WireFormat.transportFrameLimit()

    /// Resident bytes past which the broker drops every connection (its peers reconnect at once;
    /// what was in flight is lost, and subscribers count it as gaps). The backstop behind every
    /// other bound, and the only bound on what libzmq holds for a peer that sends a multi-part
    /// message and never finishes it. nil: no limit.
    public var memoryLimit: UInt64? = BrokerConfiguration.defaultMemoryLimit

    /// The low-latency setting. After forwarding, the thread keeps looking for the next message
    /// this long (yielding its core) before it sleeps, so a message arriving meanwhile needs no
    /// wake-up; a core stays busy while traffic flows. Zero (the default) sleeps at once.
    public var idleSpin: Duration = .zero

    /// How long a stop keeps handing what the broker already took to its subscribers before it
    /// closes (five seconds). Nothing more is read from publishers (they redial another broker or
    /// this one when it is back); what the broker holds for its subscribers reaches those that
    /// read within this time. A subscriber still behind when it passes loses the rest, and counts
    /// it as a gap when its stream goes on (through another broker, or the publisher's end of
    /// stream). Zero: close at once, dropping what is queued (as before this setting).
    public var drainTimeout: Duration = .seconds(5)

    /// The most names whose retained value the broker keeps (NBP-1 §18; 0, the default: it keeps
    /// none). Above zero the broker subscribes to every name at its publishers, because it must
    /// see a retained post that no subscriber wants yet: publishers then send it everything they
    /// post (their filtering saves them nothing through this broker), and count it as a
    /// subscriber of every name (`waitForSubscribers`). Past the bound the value updated longest
    /// ago is evicted, counted and logged. Kept in memory only (a restart loses them) unless
    /// `stateDirectory` is set.
    public var retainedNames: Int = 0

    /// The most bytes of retained notifications the broker keeps (their encoded frames), 64 MiB
    /// by default; past it the value updated longest ago is evicted, counted and logged. One
    /// notification larger than this is not kept (counted as evicted).
    public var retainedBytes: Int = BrokerConfiguration.defaultRetainedBytes

    /// A directory where the broker keeps its retained values across restarts (nil, the default:
    /// in memory only). Created if missing (its parent must exist); it holds `retained.log`, an
    /// append-only log of checksummed records written on every retained change (no fsync each: a
    /// crash or `kill -9` of the broker loses nothing that it had written; a power loss may lose
    /// the last seconds), and `lock`, which keeps a second broker out. A torn or corrupt end is
    /// reported as a warning, cut off, and the good records loaded. Needs `retainedNames` above 0.
    public var stateDirectory: String?

    /// CURVE on both sides, admitting only the allow-listed keys (plaintext peers included,
    /// everyone else is refused and counted). nil: plaintext.
    public var security: BrokerSecurity?

    /// Where the broker logs every event and CURVE outcome, at its level (`BrokerEvent.log(to:)`,
    /// `AuthenticationEvent.log(to:)`: connections at debug, slow subscribers and refusals as
    /// warnings), on the forwarding thread (the ZAP handler's with CURVE), synchronously: a log
    /// handler that blocks stalls forwarding (`Broker.forwardingLoopAge()` shows it).
    public var logger: Logger?

    /// Hears slow-subscriber episodes, memory resets and connections coming and going, on the
    /// forwarding thread (on the ZAP handler's with CURVE), after `logger`.
    public var onEvent: (@Sendable (BrokerEvent) -> Void)?

    /// Hears CURVE admissions and refusals (rate-limited per key), on the ZAP handler's thread.
    public var onAuthentication: (@Sendable (AuthenticationEvent) -> Void)?

    /// A broker on these endpoints with every other setting at its default.
    public init(frontend: String, backend: String) {
        self.frontend = frontend
        self.backend = backend
    }

    /// The low-latency preset: `idleSpin` of 200 µs, so a notification that arrives just after
    /// another needs no wake-up of the forwarding thread (a core stays busy while traffic flows;
    /// docs/benchmarks/latency-and-broker.md has the round trips with and without it). Everything
    /// else as the defaults.
    public static func lowLatency(frontend: String, backend: String) -> BrokerConfiguration {
        var configuration = BrokerConfiguration(frontend: frontend, backend: backend)
        configuration.idleSpin = .microseconds(200)
        return configuration
    }

    /// The default `subscriberBudget`: 64 MiB, what NATS lets a client fall behind
    /// (`max_pending`) before it calls it a slow consumer.
    public static let defaultSubscriberBudget = 64 << 20

    /// The default `retainedBytes`: 64 MiB.
    public static let defaultRetainedBytes = 64 << 20
    /// The largest `retainedNames`: 10 million.
    public static let maximumRetainedNames = 10_000_000
    /// The largest `retainedBytes`: 64 GiB.
    public static let maximumRetainedBytes = 64 << 30

    /// The default `memoryLimit`: 4 GiB.
    public static let defaultMemoryLimit: UInt64? = 4 << 30

    /// The longest `heartbeat`: three of them (the keepalive timeout) within
    /// `BusConfiguration.maximumHeartbeat`, the range ZMTP heartbeats took.
    public static let maximumHeartbeat: Duration = .milliseconds(2_184_000)

    /// The longest `slowSubscriberPatience` and `idleSpin` accepted.
    public static let maximumSlowSubscriberPatience: Duration = .seconds(3_600)
    public static let maximumIdleSpin: Duration = .seconds(10)
    /// The longest `drainTimeout` accepted.
    public static let maximumDrainTimeout: Duration = .seconds(3_600)

    /// The largest `subscriberBudget`: 1 TiB. A budget bounds memory, and past any machine's it
    /// bounds nothing.
    public static let maximumSubscriberBudget = 1 << 40

    /// The smallest `memoryLimit`: 64 MiB. Below it the broker alone (some 30 MiB idle) would
    /// pass the limit and reset every connection, over and over.
    public static let minimumMemoryLimit: UInt64 = 64 << 20
    /// The largest `memoryLimit` accepted: 1 PiB.
    public static let maximumMemoryLimit: UInt64 = 1 << 50

    /// Why `upstream` and `security` do not combine (`invalidSetting()`'s reason).
    public static let curveWithUpstreamReason =
        "does not combine with CURVE yet: the frontend would be a CURVE server for its publishers "
        + "and a CURVE client of the upstream broker at once (see docs/deployment.md)"

    /// One of the settings, as `invalidSetting()` names it. A struct with static members, so a
    /// setting added later breaks no caller that maps them (as `nbus broker` maps each to its flag).
    public struct Setting: Hashable, Sendable, CustomStringConvertible {
        /// The property's name.
        public let name: String
        public var description: String { name }

        public static let frontend = Setting(name: "frontend")
        public static let backend = Setting(name: "backend")
        public static let upstream = Setting(name: "upstream")
        public static let highWaterMark = Setting(name: "highWaterMark")
        public static let subscriberBudget = Setting(name: "subscriberBudget")
        public static let slowSubscriberPatience = Setting(name: "slowSubscriberPatience")
        public static let heartbeat = Setting(name: "heartbeat")
        public static let maximumSubscriptionSize = Setting(name: "maximumSubscriptionSize")
        public static let maximumFrameSize = Setting(name: "maximumFrameSize")
        public static let memoryLimit = Setting(name: "memoryLimit")
        public static let idleSpin = Setting(name: "idleSpin")
        public static let drainTimeout = Setting(name: "drainTimeout")
        public static let security = Setting(name: "security")
        public static let retainedNames = Setting(name: "retainedNames")
        public static let retainedBytes = Setting(name: "retainedBytes")
        public static let stateDirectory = Setting(name: "stateDirectory")
    }

    /// The first setting out of range and why (the words that follow its name: "must be ...,
    /// not ..."), or nil when every value is valid. The one place the broker's rules are written:
    /// `validate()` throws it, and `nbus broker` reports it under the flag that set the value.
    public func invalidSetting() -> (setting: Setting, reason: String)? {
        if frontend.isEmpty { return (.frontend, "must be an endpoint, not empty") }
        if backend.isEmpty { return (.backend, "must be an endpoint, not empty") }
        // Two `tcp://host:*` wildcards are fine: each bind picks its own free port.
        if frontend == backend && !frontend.hasSuffix(":*") { return (.backend, "must differ from frontend (both are \(frontend))") }
        for endpoint in upstream where endpoint == frontend || endpoint == backend {
            return (.upstream, "\(endpoint) is this broker's own endpoint (a cycle)")
        }
        if security != nil && !upstream.isEmpty { return (.upstream, Self.curveWithUpstreamReason) }
        if highWaterMark < 0 { return (.highWaterMark, "must be 0 (no limit) or more, not \(highWaterMark)") }
        if !(0...Self.maximumSubscriberBudget).contains(subscriberBudget) {
            return (.subscriberBudget, "must be 0 (none: highWaterMark messages) to 1 TiB, not \(Self.bytes(subscriberBudget))")
        }
        if !(.zero...Self.maximumSlowSubscriberPatience).contains(slowSubscriberPatience) {
            return (.slowSubscriberPatience, "must be zero to 3600 seconds, not \(Self.seconds(slowSubscriberPatience))")
        }
        // Three intervals make the keepalive timeout, held to the bus's one range (the one ZMTP
        // heartbeats took, kept when TCP keepalive replaced them so that no setting that worked
        // is refused now).
        if !(heartbeat == .zero || (heartbeat >= .milliseconds(1) && heartbeat <= Self.maximumHeartbeat)) {
            return (.heartbeat, "must be zero (off) or 0.001 to 2184 seconds, not \(Self.seconds(heartbeat))")
        }
        // ZMQ_MAXMSGSIZE applies to ZMTP handshake commands too (a CURVE INITIATE is about 300
        // bytes): below 512 every peer would be refused. Above 1,024 a forwarded subscription
        // would exceed what publishers accept (WireFormat.maximumSubscriptionLength).
        if !(512...WireFormat.maximumSubscriptionLength).contains(maximumSubscriptionSize) {
            return (
                .maximumSubscriptionSize,
                "must be 512...\(WireFormat.maximumSubscriptionLength) bytes, not \(maximumSubscriptionSize)"
            )
        }
        if maximumFrameSize < 512 { return (.maximumFrameSize, "must be at least 512 bytes, not \(maximumFrameSize)") }
        if let memoryLimit, !(Self.minimumMemoryLimit...Self.maximumMemoryLimit).contains(memoryLimit) {
            return (
                .memoryLimit,
                "must be 64 MiB to 1 PiB or no limit (the process alone takes some 30 MiB), not \(Self.bytes(Int(clamping: memoryLimit)))"
            )
        }
        if !(.zero...Self.maximumIdleSpin).contains(idleSpin) {
            return (.idleSpin, "must be zero to 10 seconds, not \(Self.seconds(idleSpin))")
        }
        if !(.zero...Self.maximumDrainTimeout).contains(drainTimeout) {
            return (.drainTimeout, "must be zero to 3600 seconds, not \(Self.seconds(drainTimeout))")
        }
        if !(0...Self.maximumRetainedNames).contains(retainedNames) {
            return (.retainedNames, "must be 0 (keep none) to 10000000, not \(retainedNames)")
        }
        // 0 is refused, not read as "no bound": every value would be evicted as it arrives.
        if !(1...Self.maximumRetainedBytes).contains(retainedBytes) {
            return (.retainedBytes, "must be 1 byte to 64 GiB (0 would keep nothing), not \(Self.bytes(retainedBytes))")
        }
        if let stateDirectory, let reason = Self.stateDirectoryProblem(stateDirectory, retainedNames: retainedNames) {
            return (.stateDirectory, reason)
        }
        return nil
    }

    /// Throws `.invalidConfiguration` (or `.security`) naming the first value out of range
    /// (`Broker.init` calls it): `invalidSetting()` as an error.
    public func validate() throws(BusError) {
        guard let (setting, reason) = invalidSetting() else { return }
        let text = "\(setting) \(reason)"
        throw setting == .upstream && security != nil && !upstream.isEmpty ? .security(text) : .invalidConfiguration(text)
    }

    /// Why `directory` cannot hold the retained state, or nil: it must be a writable directory,
    /// or one that can be created (its parent exists and is writable). Nothing is created here.
    private static func stateDirectoryProblem(_ directory: String, retainedNames: Int) -> String? {
        if directory.isEmpty { return "must be a directory, not empty" }
        if retainedNames == 0 { return "needs retainedNames above 0 (with none kept there is nothing to keep)" }
        var status = stat()
        if stat(directory, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else { return "must be a directory, not a file (\(directory))" }
            guard access(directory, W_OK | X_OK) == 0 else { return "must be writable by this process (\(directory) is not)" }
            return nil
        }
        guard errno == ENOENT else { return "cannot be read (\(directory): \(String(cString: strerror(errno))))" }
        var parent = directory
        while parent.count > 1 && parent.hasSuffix("/") { parent.removeLast() }
        if let slash = parent.lastIndex(of: "/") {
            parent = slash == parent.startIndex ? "/" : String(parent[..<slash])
        } else {
            parent = "."
        }
        var parentStatus = stat()
        guard stat(parent, &parentStatus) == 0, parentStatus.st_mode & S_IFMT == S_IFDIR else {
            return "cannot be created: its parent \(parent) is not a directory"
        }
        guard access(parent, W_OK | X_OK) == 0 else { return "cannot be created: its parent \(parent) is not writable" }
        return nil
    }

    /// A byte count as people read it in the messages above: whole MiB when it is one.
    private static func bytes(_ count: Int) -> String {
        count % (1 << 20) == 0 ? "\(count >> 20) MiB" : "\(count) bytes"
    }

    /// A span in seconds, as the messages above and `nbus broker`'s flags give it.
    private static func seconds(_ span: Duration) -> String {
        let (whole, fraction) = span.components
        return "\(Double(whole) + Double(fraction) / 1e18) seconds"
    }

    /// `onEvent` after logging to `logger`, as the forwarding thread calls it.
    var eventHandler: (@Sendable (BrokerEvent) -> Void)? {
        guard let logger else { return onEvent }
        let onEvent = self.onEvent
        return { @Sendable event in
            event.log(to: logger)
            onEvent?(event)
        }
    }

    /// `onAuthentication` after logging to `logger`, as the ZAP handler calls it.
    var authenticationHandler: (@Sendable (AuthenticationEvent) -> Void)? {
        guard let logger else { return onAuthentication }
        let onAuthentication = self.onAuthentication
        return { @Sendable event in
            event.log(to: logger)
            onAuthentication?(event)
        }
    }
}
