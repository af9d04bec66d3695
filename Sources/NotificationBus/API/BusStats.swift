import ZeroMQ

/// Counters of a whole bus.
public struct BusStats: Hashable, Sendable {
    /// Notifications accepted by `post`: `sent` + `unsent` + `unwanted`.
    public var posted: UInt64 = 0
    /// Notifications handed to ZeroMQ (a batch frame counts as the notifications it carries).
    public var sent: UInt64 = 0
    /// Frames handed to ZeroMQ: `sent` minus what batching merged (NBP-1 §2.3), so `sent` divided
    /// by `framesSent` is the average batch.
    public var framesSent: UInt64 = 0
    /// Posts no subscriber wanted (no subscription at this publisher covered the name): not
    /// encoded, not sent. A name sent before still uses its sequence number, so a subscriber
    /// this publisher could not see meanwhile (a broker restarting) counts the gap.
    public var unwanted: UInt64 = 0
    /// Of `unwanted`: posts of a name this publisher had sent before that no subscription covered
    /// when posted (its subscribers gone, or out of reach for a while: a broker restarting). Each
    /// used its sequence number, so a subscriber still there counts it as lost upstream: they were
    /// wanted, and lost.
    public var unwantedAfterSending: UInt64 = 0
    /// Of `unwantedAfterSending`: those posted while an endpoint this bus connects to had no
    /// connection up (`connectedEndpoints` short): lost to a broker restarting or unreachable.
    public var unwantedWhileDisconnected: UInt64 = 0
    /// Posts still queued when the bus closed (never handed to ZeroMQ).
    public var unsent: UInt64 = 0
    /// Frames read from the subscriber socket (a batch frame is one frame).
    public var framesReceived: UInt64 = 0
    /// Notifications in those frames: a batch frame (NBP-1 §2.3) counts as the notifications its
    /// header declares, any other frame, malformed ones included, as one.
    public var notificationsReceived: UInt64 = 0
    /// Valid notifications that matched no local subscription (outside every pattern); a batch
    /// frame counts as the notifications its header declares.
    public var unmatched: UInt64 = 0
    /// Notifications that rejected batch frames declared (NBP-1 §7.5): a malformed batch is one
    /// rejection in `rejected`, and this says how many notifications it cost, where its header
    /// said (a count of 1 to 1024, and no more than the frame's bytes can hold: a lying header
    /// cannot inflate it). They are never tracked, so the stream's next notification
    /// reports them in `lostUpstream` too.
    public var rejectedBatchNotifications: UInt64 = 0
    /// Times this bus passed `BusConfiguration.maximumResidentMemory` and dropped the
    /// connections of its bound endpoints.
    public var memoryLimitResets: UInt64 = 0
    /// A publisher that binds and keeps `BusConfiguration.subscriberBudget`: subscribers that took
    /// nothing for `BusConfiguration.subscriberPatience` past their budget (or while their queue
    /// was full), disconnected. Each reconnects by itself and counts what it missed as a gap.
    public var stalledSubscribersDisconnected: UInt64 = 0
    /// The same publisher: subscribers that kept taking something but stayed past their budget
    /// in bytes for 10 s in a row while it held everything back for them, disconnected (as NATS
    /// disconnects a slow consumer). Each reconnects by itself and counts what it missed as a gap.
    public var slowSubscribersDisconnected: UInt64 = 0
    /// The same publisher: times it waited for a subscriber (flow control: its posts waited
    /// meanwhile), whose queue was full or which was past its budget in bytes and moving.
    public var subscriberWaits: UInt64 = 0
    /// The same publisher: slow-subscriber episodes (a full queue that stayed full for 10 s while
    /// its subscriber moved, or whose progress could not be read), and the notifications sent
    /// past the full queues in them (those subscribers count them as gaps).
    public var slowSubscriberEpisodes: UInt64 = 0
    public var sentPastSlowSubscribers: UInt64 = 0
    /// Control messages (names whose first token is `_nbus`) this version does not know: dropped,
    /// never delivered to a subscription (NBP-1 §13, §15).
    public var unknownControlMessages: UInt64 = 0
    /// Notifications lost upstream, summed over (publisher, name) streams.
    public var lostUpstream: UInt64 = 0
    /// Notifications discarded because this bus had them already: the later copies of a bus
    /// connected to several brokers (each brings every notification, NBP-1 §17), a peer that
    /// replayed sequence numbers, or, at a stream's start, an older one a slower path brought
    /// after a newer one was delivered. Never delivered, never a loss.
    public var duplicatesDiscarded: UInt64 = 0
    /// Publisher with several brokers: notifications not sent to one of them because it refused
    /// them for longer than `BusConfiguration.pathStallLimit` (summed over brokers; the others
    /// still carried them, so subscribers lose nothing while one path is up).
    public var pathDrops: UInt64 = 0
    /// Publisher with several brokers: times a broker was given up on for a while (it refused
    /// sends for `pathStallLimit`); it is used again as soon as it takes sends.
    public var pathsParked: UInt64 = 0
    /// End-of-stream records received from closing publishers.
    public var endOfStreamRecords: UInt64 = 0
    /// End-of-stream records whose payload broke off at a malformed entry: the entries before it
    /// were applied, the rest could not be, so a tail the rest would have reported went uncounted
    /// (NBP-1 §15.1; NotificationBus never sends one).
    public var malformedEndOfStreamRecords: UInt64 = 0
    /// (Publisher, name) streams whose sequence numbers are tracked now.
    public var trackedStreams: Int = 0
    /// Streams forgotten because more than `BusConfiguration.maximumTrackedStreams` were tracked
    /// (the least recently heard first); a loss right before such a stream's next notification
    /// cannot be detected.
    public var streamsForgotten: UInt64 = 0
    /// Streams whose tracking began past sequence 1 (one broker or a direct connection; with
    /// several brokers not counted yet). Their first notifications were sent before this bus
    /// subscribed (it joined late), or were lost before it ever heard of the stream (a broker that
    /// restarted before its first notification reached this bus, or a subscription that reached
    /// the restarted broker after the stream began), or, for a stream it had forgotten
    /// (`streamsForgotten`), came before it was forgotten. NBP-1 §8 counts none of them as lost
    /// (nothing tells a late join from a lost head), so they are counted here, not left unsaid.
    /// (A stream none of whose notifications arrived still goes unsaid: NBP-1 §8.)
    public var streamsJoinedLate: UInt64 = 0
    /// The notifications before the first one seen of each stream in `streamsJoinedLate`
    /// (its first sequence minus one, summed): in no gap and not in `lostUpstream`.
    public var notificationsBeforeJoining: UInt64 = 0
    /// At close: NotificationBus subscribers that did not acknowledge this publisher's end-of-stream
    /// record before the close timeout (their lost tail, if any, may go uncounted).
    public var endOfStreamUnacknowledged: UInt64 = 0
    /// Retained values (NBP-1 §18) handed to new subscriptions from brokers' snapshots
    /// (`BusNotification.isRetained`), and those skipped because the name had already reached
    /// the subscription live, as new or newer, since it was made.
    public var retainedReceived: UInt64 = 0
    public var retainedSuperseded: UInt64 = 0
    /// Retained snapshots asked for again because a subscribing connection came back (a broker
    /// that restarted, or a publisher bound again): one per subscription that starts from
    /// retained values, per reconnection (one path; with several brokers the others kept the
    /// stream, and nothing is asked again). Each is logged at info level.
    public var retainedRenewals: UInt64 = 0
    /// Values of such a renewed snapshot this bus had already seen (the same publisher's
    /// sequence, or an older one of that stream): not delivered twice, counted here. A newer
    /// one resumes its stream, marked retained, and what was lost before it is a gap as live.
    public var retainedRepeats: UInt64 = 0
    /// Of the retained values this bus keeps of its own retained posts (a publisher that binds,
    /// an embedded bus; NBP-1 §18): those evicted to stay within `BusConfiguration.retainedNames`
    /// and `retainedBytes` (the one updated longest ago first; a value larger than the whole
    /// byte bound counts as evicted), and those dropped because their `retain-for` passed.
    /// Subscribers that ask later no longer get them. The first eviction is logged as a warning.
    public var ownRetainedEvictions: UInt64 = 0
    public var ownRetainedExpirations: UInt64 = 0
    /// Typed messages (`post(_:)`) encoded as JSON by this bus's posting tasks.
    public var messagesEncoded: UInt64 = 0
    /// Typed messages decoded by this bus's typed subscriptions (in their consumers' tasks).
    public var messagesDecoded: UInt64 = 0
    /// Malformed messages dropped, by NBP/1 reason.
    public var rejected: [RejectionReason: UInt64] = [:]
    /// Subscriptions currently registered at this bus.
    public var activeSubscriptions: Int = 0
    /// Endpoints this bus connects to (tcp, ipc) whose connection is up now: it passed its
    /// handshake and has not dropped. 0 while a broker is not running or not reachable (libzmq
    /// keeps retrying); endpoints it binds are not counted.
    public var connectedEndpoints: Int = 0
    /// CURVE client: handshakes the server refused (its ZAP handler did not admit this bus's key).
    public var handshakesRefused: UInt64 = 0
    /// CURVE client: other failed handshakes (a wrong server key, a server without CURVE).
    public var handshakesFailed: UInt64 = 0
    /// CURVE client: why the last handshake failed, if one did.
    public var lastHandshakeFailure: HandshakeFailure?
    /// Failed handshakes that met another security mechanism (plaintext against CURVE). Counted
    /// apart because the same refusal often reads as a dropped connection (`EPIPE`) instead,
    /// depending on which side's write lands first: one mismatch settles it.
    public var handshakeMechanismMismatches: UInt64 = 0
    /// CURVE server (a bus that binds): what it did with its clients' handshakes.
    public var clientAuthentication = AuthenticationCounts()
    /// Socket calls that failed for a reason other than would-block (a subscription the SUB
    /// socket refused, a frame ZeroMQ rejected, a failing poll): each is also counted where it
    /// had an effect (`unsent`, an ended subscription, a failed wait).
    public var socketErrors: UInt64 = 0
    /// The last such failure: what the bus was doing and libzmq's error.
    public var lastSocketError: String?

    /// Empty counters.
    public init() {}

    /// All rejections, whatever the reason.
    public var rejectedTotal: UInt64 { rejected.values.reduce(0, +) }
}
