/// Message and byte counters of a running broker, as libzmq's proxy reports them.
public struct BrokerStatistics: Hashable, Sendable {
    /// Messages received from publishers (frontend, XSUB): frames, a batch of notifications
    /// (NBP-1 §2.3) being one, forwarded as it is.
    public var fromPublishers: UInt64 = 0
    /// Bytes received from publishers.
    public var bytesFromPublishers: UInt64 = 0
    /// Notifications received from publishers: a batch frame counts as the records its header
    /// declares, no more than its bytes can hold (NBP-1 §7.5), any other message as one (control
    /// messages included).
    public var notificationsFromPublishers: UInt64 = 0
    /// Notifications sent to subscribers, counted as `notificationsFromPublishers`.
    public var notificationsToSubscribers: UInt64 = 0
    /// Messages sent to subscribers (backend, XPUB); per message, not per subscriber.
    public var toSubscribers: UInt64 = 0
    /// Bytes sent to subscribers.
    public var bytesToSubscribers: UInt64 = 0
    /// Subscription messages received from subscribers (backend).
    public var subscriptionMessages: UInt64 = 0
    /// Times the broker held notifications back for a subscriber (publishers waited): its queue
    /// was at its mark, or it was past its byte budget while moving.
    public var backpressureWaits: UInt64 = 0
    /// Slow-subscriber episodes: a subscriber past its budget made no room for the broker's
    /// patience, and none of the full ones could be named as stalled.
    public var slowSubscriberEpisodes: UInt64 = 0
    /// Notifications sent past at least one full subscriber during those episodes (each full
    /// subscriber lost it and counts it as a gap); a batch frame counts as the notifications its
    /// header declares (NBP-1 §2.3), the broker's only look past a frame's name.
    public var sentPastSlowSubscribers: UInt64 = 0
    /// Subscribers disconnected because they were past their budget and made no progress at all
    /// for the broker's patience (stopped, frozen): each reconnects by itself and counts what it
    /// missed as a gap; nobody else lost anything.
    public var stalledSubscribersDisconnected: UInt64 = 0
    /// Subscribers disconnected because they stayed past their budget, although taking
    /// something, for the longest hold (10 s) while the broker held everybody back for them
    /// (`BrokerEvent.slowSubscriberDisconnected`).
    public var slowSubscribersDisconnected: UInt64 = 0
    /// End-of-stream records sent again for subscribers that may have missed them (stopped
    /// while their publisher closed); see `EndOfStreamReplay`.
    public var endOfStreamReplays: UInt64 = 0
    /// End-of-stream records forwarded but not kept for a replay: over NBP-1's 64 KiB payload
    /// (a genuine publisher splits its names into records within it; see `EndOfStreamReplay`).
    public var endOfStreamRecordsTooLarge: UInt64 = 0
    /// End-of-stream records kept for a replay and dropped, oldest first, before their last
    /// replay: more than 4,096 records or 16 MiB were kept.
    public var endOfStreamRecordsEvicted: UInt64 = 0
    /// The bytes of the end-of-stream records kept for a replay now (at most 16 MiB).
    public var endOfStreamReplayBytes = 0
    /// Frames from publishers refused because they carried a publisher id that another frontend
    /// connection (with CURVE: another key) used first: never forwarded, never replayed (a forged
    /// end-of-stream record or sequence; see `PublisherOwnership`). Counted in
    /// `fromPublishers` too, never in `toSubscribers`.
    public var foreignPublisherIDFrames: UInt64 = 0
    /// How long the stop took to hand on what the broker held (`BrokerConfiguration.drainTimeout`
    /// bounds it); zero while running.
    public var stopDrain: Duration = .zero
    /// The stop's drain ran out of time with notifications still queued for a subscriber that
    /// was behind: it lost them, and counts them as a gap when its stream goes on.
    public var stopDrainTimedOut = false
    /// Notifications read from a publisher that no subscriber had taken when the drain ended
    /// (the one the forwarder held; what libzmq still queued shows as `stopDrainTimedOut`).
    public var undeliveredAtStop: UInt64 = 0
    /// Publisher ids the broker holds an owner for now (bounded; see `PublisherOwnership`).
    public var ownedPublisherIDs = 0
    /// Subscription messages accepted from subscribers but not forwarded to publishers: longer
    /// than `maximumSubscriptionSize` − 64 bytes (see `Broker.init`).
    public var subscriptionsNotForwarded: UInt64 = 0
    /// Connections open now (publishers and subscribers), from the sides' monitors.
    public var connections = 0
    /// The most connections open at once.
    public var peakConnections = 0
    /// accept() failures (out of file descriptors: new clients shut out).
    public var acceptFailures: UInt64 = 0
    /// Without CURVE: subscriber handshakes the broker held back before letting them finish, so
    /// a storm of connections coming and going cannot outrun the forwarding thread (each that
    /// ends costs it a walk of every subscription); see docs/deployment.md.
    public var subscriberHandshakesHeld: UInt64 = 0
    /// Of those, handshakes never answered (held 20 s, or past 4,096 waiting): libzmq ended them
    /// at its handshake timeout and their clients dialled again.
    public var subscriberHandshakesAbandoned: UInt64 = 0
    /// Times the broker's memory passed its limit and every connection was dropped.
    public var memoryLimitResets: UInt64 = 0
    /// Errors of the forwarding loop's own socket calls (a bug if ever non-zero).
    public var forwardingErrors: UInt64 = 0
    /// With CURVE: what the frontend did with publishers' handshakes (all zero without CURVE).
    public var publisherAuthentication = AuthenticationCounts()
    /// With CURVE: what the backend did with subscribers' handshakes (all zero without CURVE).
    public var subscriberAuthentication = AuthenticationCounts()

    /// Retained values (NBP-1 §18) the broker keeps now, and their bytes (encoded frames).
    public var retainedNames = 0
    public var retainedBytes = 0
    /// Retained values dropped to stay within `retainedNames` and `retainedBytes` (the one
    /// updated longest ago first), and notifications too large to keep at all.
    public var retainedEvictions: UInt64 = 0
    /// Retained values dropped because their `retain-for` passed (found when a snapshot was taken).
    public var retainedExpirations: UInt64 = 0
    /// Retained values removed by a clear (a retained post with an empty payload).
    public var retainedClears: UInt64 = 0
    /// Snapshots sent to new subscriptions, and the notifications they carried.
    public var retainedSnapshots: UInt64 = 0
    public var retainedNotificationsSent: UInt64 = 0
    /// Snapshots not sent whole: their subscriber took nothing for 5 s while others waited
    /// behind it (its wait for its values times out and says so).
    public var retainedSnapshotsDropped: UInt64 = 0
    /// With `stateDirectory`: a damaged `retained.log` found at start (1, else 0), and the bytes
    /// cut off its end there (the records in them cannot be counted: the damage hides where each
    /// begins). Each is also logged as one warning.
    public var retainedStateDamaged: UInt64 = 0
    public var retainedStateBytesCut: UInt64 = 0
    /// With `stateDirectory`: writes to the log that failed (a full disk, a directory gone); the
    /// values stay in memory and are written again when it works. The first of a run is logged.
    public var retainedStateWriteFailures: UInt64 = 0

    /// Zero counters.
    public init() {}
}
