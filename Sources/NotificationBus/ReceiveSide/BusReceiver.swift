#if canImport(Glibc)
import Glibc
#endif
import ZeroMQ

/// What one subscription gets from one round of reading: its events in stream order, with the
/// counts the state machine needs, so handing them over neither re-scans nor copies them.
struct SubscriptionBatch {
    var events = EventQueue()
    /// `.notification` elements in `events`.
    var notifications = 0
    /// The `bufferedSize` of those notifications, together.
    var bytes = 0
    /// `.gap` elements in `events`, and the notifications they stand for (upstream only).
    var gaps = 0
    var lostUpstream: UInt64 = 0
    /// Frames whose prefix reached this subscription but whose name its pattern rejects.
    var filteredOut: UInt64 = 0
    /// The subscription is typed: a looped-back typed post's value goes to it as it is; any
    /// other subscription gets the post's JSON, made here if the post travelled without it.
    var takesLocalValues = false

    var isEmpty: Bool { events.isEmpty && filteredOut == 0 }

    mutating func append(notification: consuming BusNotification) {
        // Only this bus's own typed posts carry a value (looped back, `deliverLocally`).
        if notification.localValue != nil && !takesLocalValues { LocalMessageValue.materialize(&notification) }
        bytes += notification.bufferedSize
        events.append(.notification(notification))
        notifications += 1
    }

    mutating func append(gap: Gap) {
        events.append(.gap(gap))
        gaps += 1
        if gap.cause == .lostUpstream { lostUpstream += gap.count }
    }

    /// Empties the batch, keeping the events' storage.
    mutating func reset() {
        events.removeAll()
        notifications = 0
        bytes = 0
        gaps = 0
        lostUpstream = 0
        filteredOut = 0
    }
}

/// The subscriber side of a bus's I/O thread: reads frames, routes each to the subscriptions it
/// matches, tracks NBP/1 sequences per (publisher, name) and reports gaps.
///
/// A value the I/O thread owns and mutates in place: one whole batch of frames is handled in one
/// access, without the per-field exclusivity checks and retains of class properties.
struct BusReceiver {
    /// One local subscription and what the current round has for it.
    struct Route {
        let storage: SubscriptionStorage
        let pattern: NamePattern
        /// `pattern.subscriptionPrefix`, the bytes every frame it can match begins with. Raw
        /// bytes, compared per frame without the retain and release an array's access costs;
        /// valid while `prefixOwner` (held by every copy of this route) lives.
        let prefix: UnsafeRawBufferPointer
        let prefixOwner: RoutePrefix
        /// For an exact pattern, the name itself: frames that start with `prefix` carry it.
        let exactName: NotificationName?
        /// `exactName != nil`, readable without copying the name out.
        let isExact: Bool
        var batch = SubscriptionBatch()
        /// What the subscription took before it is full, as it said when last handed a batch (or
        /// when reading resumed): only its consumer changes it meanwhile, and only upwards.
        var room = ReadingRoom.unbounded

        init(storage: SubscriptionStorage) {
            self.storage = storage
            pattern = storage.pattern
            prefixOwner = RoutePrefix(pattern.subscriptionPrefix)
            prefix = UnsafeRawBufferPointer(prefixOwner.bytes)
            exactName = pattern.exactName
            isExact = exactName != nil
            batch.takesLocalValues = storage.takesLocalValues
        }
    }

    /// Owns a route's prefix bytes (freed with the last copy of the route).
    final class RoutePrefix {
        let bytes: UnsafeMutableRawBufferPointer

        init(_ prefix: [UInt8]) {
            bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: prefix.count, alignment: 1)
            bytes.copyBytes(from: prefix)
        }

        deinit { bytes.deallocate() }
    }

    struct StreamKey: Hashable {
        let publisherID: UInt64
        let name: NotificationName
    }

    /// In no particular order: a removal moves the last route into the gap (issue 38, item 10).
    var routes: [Route] = []
    /// Where each subscription's route is in `routes`.
    private var routeIndexByID: [UInt64: Int] = [:]
    /// Retained snapshots asked for and not yet ended, by reply name, and those that ended since
    /// the loop last looked (`BusReceiver+Retained.swift`).
    var pendingSnapshots: [NotificationName: PendingSnapshot] = [:]
    var endedSnapshots: [EndedSnapshot] = []
    /// Several paths: per stream, the sequence of the retained value a snapshot handed over
    /// while the merged live stream did not cover it yet, and the subscriptions it went to. A
    /// slower broker's live copy of it (or of an older one) still goes through the merge, to the
    /// other subscriptions, but not again to those (a duplicate for them, counted); forgotten
    /// once the merge hands on the value's sequence. At most `maximumRetainedHandedOver` streams.
    var retainedHandedOver: [StreamKey: HandedOverValue] = [:]
    struct HandedOverValue {
        var sequence: UInt64
        var subscriptions: Set<UInt64>
    }
    static let maximumRetainedHandedOver = 65_536
    /// Per retained subscription, the values (stream and sequence) handed to it as retained, so a
    /// renewal after a reconnection never hands one again, even for a stream this bus no longer
    /// tracks (ended by its end of stream, or forgotten past `maximumTrackedStreams`). At most
    /// `maximumRemembered` a subscription; past it, what the bus tracks decides alone.
    var retainedGiven: [UInt64: Set<DeliveredKey>] = [:]
    static let maximumRemembered = 100_000
    /// Streams ended by their end of stream while a retained subscription matched them, with the
    /// last sequence this bus had of each: a renewal after a reconnection must not hand such a
    /// stream's value again when the subscription had it live (the live delivery is not in
    /// `retainedGiven`, and the stream is no longer tracked). At most `maximumRemembered`; past
    /// it the oldest is forgotten.
    var endedRetainedStreams: [StreamKey: UInt64] = [:]
    var endedRetainedOrder: [StreamKey] = []
    var endedRetainedOrderStart = 0
    /// Looped back (an embedded bus): the retained values of this bus's own posts.
    /// Bounded by `BusConfiguration.retainedNames` and `retainedBytes` (set by the event loop).
    var localRetained = RetainedStore(
        maximumNames: BusConfiguration.defaultRetainedNames, maximumBytes: BusConfiguration.defaultRetainedBytes)
    /// What `localRetained` evicted and let expire (`BusStats.ownRetainedEvictions`,
    /// `ownRetainedExpirations`), and the first eviction's name until the loop logs it.
    var localRetainedEvictions: UInt64 = 0
    var localRetainedExpirations: UInt64 = 0
    var firstLocalRetainedEviction: String?

    /// `notification` with its post's local value, while `deliverLocally(_:firstPost:values:)`
    /// routes a frame that has any (`record`: its index in a batch frame).
    @inline(__always)
    private func withLocalValue(_ notification: consuming BusNotification, record: Int = 0) -> BusNotification {
        guard !localValues.isEmpty else { return notification }
        var notification = notification
        notification.localValue = localValues[localFirstPost + record]
        return notification
    }
    /// While `deliverLocally(_:firstPost:values:)` routes a frame: the values of its typed posts.
    private var localValues = LocalValues()
    private var localFirstPost = 0
    /// Per stream, except the cached stream (see `cachedStream`): the last sequence seen, and when
    /// it was last heard (`counters.framesReceived` then), to forget the stalest first.
    var lastSequence: [StreamKey: (last: UInt64, heard: UInt64)] = [:]
    /// The stream of the previous notification and its last sequence, kept out of `lastSequence`
    /// so a run from one stream (the common case) costs no hashing. `spillCachedStream()` puts
    /// it back before anything reads the table.
    var cachedStream: (key: StreamKey, last: UInt64)?
    /// Receive-side counters (`framesReceived`, `unmatched`, `lostUpstream`, `endOfStreamRecords`,
    /// `duplicatesDiscarded`, `rejected`).
    var counters = BusStats()
    /// The subscriber's paths: one per connected broker (NBP-1 §17), 1 for every other shape.
    /// With one path, `lastSequence` and `cachedStream` track streams; with more, `merged` does.
    let pathCount: Int
    /// How long a hole one path left is waited for while another can still fill it (ns).
    let gapTimeout: UInt64
    /// A bit per path whose connection is up (every path until its monitor says otherwise).
    private(set) var connectedPaths: UInt64
    /// With several paths: every tracked stream, merged over the paths.
    private(set) var merged: MergedStreams
    /// What a batch's merge said per notification; kept for its capacity.
    private var mergeDispositions: [PathMergeStateMachine<BusNotification>.Disposition] = []
    /// The path the frames being read come from, and when the read began (monotonic ns).
    private var currentPath = 0
    private var now: UInt64 = 0

    /// Readiness tokens echoed by publishers (name bytes), for the I/O thread to resolve.
    private var readyTokens: [[UInt8]] = []
    /// Publishers whose final end-of-stream record arrived and must be acknowledged upstream.
    private var endOfStreamAcknowledgements: [UInt64] = []
    /// Publishers whose end-of-stream record named a stream a subscription here matches, until its
    /// final part came (a record in several parts is acknowledged at the last).
    private var endOfStreamMatched: Set<UInt64> = []
    /// Whether reading stops (a `suspendProducer` subscription is full) until its consumer
    /// makes room (`resumeReadingUnlessFull`).
    private(set) var readingPaused = false
    /// The least room of the subscriptions (`Route.room`), which bounds the next round (`read`).
    private(set) var readingRoom = ReadingRoom.unbounded
    let maximumPayload: Int
    /// This receiver's own header limit (at most NBP/1's 32).
    let maximumHeaderCount: Int
    /// `BusConfiguration.maximumTrackedStreams` (at least 2: the cached stream and one more).
    let maximumTrackedStreams: Int

    init(
        maximumPayload: Int, maximumHeaderCount: Int = WireFormat.maximumHeaderCount,
        maximumTrackedStreams: Int = BusConfiguration.defaultMaximumTrackedStreams,
        paths: Int = 1, gapTimeout: Duration = BusConfiguration.defaultPathGapTimeout
    ) {
        self.maximumPayload = maximumPayload
        self.maximumHeaderCount = maximumHeaderCount
        self.maximumTrackedStreams = max(2, maximumTrackedStreams)
        pathCount = min(64, max(1, paths))
        self.gapTimeout = Timestamps.boundedNanoseconds(gapTimeout)
        connectedPaths = pathCount == 64 ? .max : (1 << UInt64(pathCount)) - 1
        merged = MergedStreams(paths: pathCount, maximumTracked: self.maximumTrackedStreams, gapTimeout: self.gapTimeout)
    }

    /// Paths that are down until their monitor reports a connection (or they bring something).
    /// Until `pathsRead(at:now:)` says the monitors were read after a stream's first arrival, a
    /// path down is still waited for at that stream's start.
    mutating func startDisconnected(paths: [Int]) {
        for path in paths where path >= 0 && path < pathCount { connectedPaths &= ~(1 << UInt64(path)) }
        if !paths.isEmpty { merged.pathsReadAt = 0 }
    }

    /// A path is down (as last read) and a stream's start waits for a reading of the monitors
    /// taken after its first arrival (`MergedStreams.startAwaitsPathReading`).
    var startAwaitsPathReading: Bool {
        let all: UInt64 = pathCount == 64 ? .max : (1 << UInt64(pathCount)) - 1
        return connectedPaths != all && merged.startAwaitsPathReading
    }

    /// The paths' monitors were read at `readAt` (monotonic ns, taken before the read), their
    /// changes already given to `setPath`: a stream whose start waits on a path that is down
    /// can now start (every waiting stream is settled once per new reading).
    mutating func pathsRead(at readAt: UInt64, now: UInt64) {
        guard merged.pathsReadAt != .max, readAt != merged.pathsReadAt else { return }
        merged.pathsReadAt = readAt
        settleMergedStreams(now: now, all: true)
    }

    // MARK: Subscriptions

    mutating func add(_ storage: SubscriptionStorage) {
        routeIndexByID[storage.id] = routes.count
        var route = Route(storage: storage)
        // Its room bounds the next round already (its capacity, for a new one).
        route.room = storage.room
        readingRoom = readingRoom.narrowed(to: route.room)
        routes.append(route)
    }

    /// Where the route of subscription `id` is in `routes`, found without a search.
    func routeIndex(of id: UInt64) -> Int? { routeIndexByID[id] }

    /// Removes a subscription; forgets the streams no remaining subscription matches, so one that
    /// comes back starts tracking afresh instead of reporting what passed meanwhile as lost.
    mutating func remove(id: UInt64) -> SubscriptionStorage? {
        // Found by id and taken out by moving the last route into its place: constant time. A
        // search and `remove(at:)` (which shifts every later route) made a subscriber of 20,000
        // patterns spend 40% of its CPU in memmove while its subscriptions ended.
        guard let index = routeIndexByID.removeValue(forKey: id) else { return nil }
        let last = routes.count - 1
        if index != last {
            routes.swapAt(index, last)
            routeIndexByID[routes[index].storage.id] = index
        }
        let route = routes.removeLast()
        retainedGiven[id] = nil
        spillCachedStream()
        // Only the streams the removed pattern matched can have lost their last subscription, and
        // only those are checked against the others: removing each of n subscriptions in turn
        // (a subscriber of 10,000 patterns closing) stays linear in n, not n x n.
        let removed = route.pattern
        let remaining = routes  // copy-on-write: shares the storage, copies nothing
        func orphaned(_ name: NotificationName) -> Bool {
            removed.matches(name) && !remaining.contains { $0.pattern.matches(name) }
        }
        if !lastSequence.isEmpty { lastSequence = lastSequence.filter { key, _ in !orphaned(key.name) } }
        merged.forgetStreams { orphaned($0.name) }
        return route.storage
    }

    /// Ends every subscription (the bus closed): consumers drain what they have, then finish.
    mutating func finishAll() {
        for route in routes { route.storage.finishFromBus() }
        routes.removeAll()
        routeIndexByID.removeAll()
    }

    var subscriptionCount: Int { routes.count }

    var wantsProducerPaused: Bool { routes.contains { $0.storage.wantsProducerPaused } }

    /// Sets `readingRoom` to the least of the routes' rooms, and pauses reading if it is none.
    private mutating func settleReadingRoom() {
        var least = ReadingRoom.unbounded
        for route in routes { least = least.narrowed(to: route.room) }
        readingRoom = least
        if least.isExhausted { readingPaused = true }
    }

    /// A consumer made room, or a subscription went: reading resumes unless a `suspendProducer`
    /// subscription is still full.
    /// Only a paused receiver looks: a subscription asks for the pause when a batch fills it
    /// (`flush`), never otherwise, so one not paused stays so. The look takes each
    /// subscription's lock, and the loop calls this after every command: looking unpaused made
    /// 10,000 subscriptions cost 10,000 x 10,000 looks to start.
    /// Each subscription's room is asked afresh (it grew as its consumer took), so the first
    /// round after the pause reads what fits, not one frame.
    mutating func resumeReadingUnlessFull() {
        guard readingPaused else { return }
        readingPaused = false
        for index in routes.indices { routes[index].room = routes[index].storage.room }
        settleReadingRoom()
    }

    /// The readiness tokens echoed since the last call, for the loop to resolve.
    mutating func takeReadyTokens() -> [[UInt8]] {
        defer { readyTokens = [] }
        return readyTokens
    }

    /// The publishers whose final end of stream arrived since the last call, to acknowledge.
    mutating func takeEndOfStreamAcknowledgements() -> [UInt64] {
        defer { endOfStreamAcknowledgements = [] }
        return endOfStreamAcknowledgements
    }

    // MARK: Reading

    /// The most frame bytes one `read` takes (the round then ends, as at `limit` frames): 4 MiB,
    /// what 1,024 frames of 4 KiB batches (the default before 32 KiB) come to. libzmq's I/O thread refills the
    /// socket's queue while a round reads it, so a round of 1,024 frames decoded up to 1,024 of
    /// whatever size the publishers batch: with 32 KiB frames a flooded subscriber's private
    /// memory went from 12 to 39-65 MB, with 64 KiB frames to 90-119 MB (peers kit, 1,000,000 x
    /// 256 B). Bounded in bytes, what a round holds no longer follows the publishers' frame size.
    static let roundByteLimit = 4 << 20

    /// Reads up to `limit` frames (and about `byteLimit` bytes, and about the subscriptions'
    /// room, `readingRoom`, shared among the paths: the frame that reaches any is the last)
    /// without waiting; returns how many were read (fewer when none is waiting: would-block ends
    /// the read, it is not an error). Other socket errors are thrown; what was read before stays
    /// in the subscriptions' batches for `flush()`.
    ///
    /// The room bound: a round lands in the subscriptions at once, and a full `suspendProducer`
    /// one stops reading until its consumer has made room again, so whatever a round takes past
    /// the capacity is socket left unread for the consumer to work through first. Bounded by the
    /// room, a round fills the fullest subscription to its capacity and passes it by one frame
    /// at most; a subscriber that keeps up has nearly all its capacity as room, so its rounds
    /// hardly change (a fixed bound of 1,024 notifications cost a fast subscriber 15-37%,
    /// docs/benchmarks/send-side.md). Counted as `notificationsReceived` counts (a batch frame
    /// as its records, whichever subscription they go to) and in frame bytes, which are close to
    /// what the buffer counts per notification.
    mutating func read(
        from socket: Socket, path: Int = 0, limit: Int, byteLimit: Int = BusReceiver.roundByteLimit
    ) throws(ZMQError) -> Int {
        currentPath = path
        var count = 0
        var bytesRead = 0
        // Each path its share, at least one frame: a path never read while another takes the
        // room would be cut by its own broker as stalled.
        let notificationLimit = UInt64(max(1, readingRoom.notifications / pathCount))
        let byteLimit = min(byteLimit, max(1, readingRoom.bytes / pathCount))
        let notificationsBefore = counters.notificationsReceived
        while count < limit && bytesRead < byteLimit
            && counters.notificationsReceived &- notificationsBefore < notificationLimit
        {
            // Would-block ends the read as a value (no error made each round).
            guard
                let isMultipart = try socket.receiveIfReady({ bytes, more in
                    // Several paths: the merge's clock, read once a read finds a frame (most
                    // reads of the second path in a round find none).
                    if count == 0 && pathCount > 1 { now = Timestamps.monotonicNanoseconds() }
                    bytesRead &+= bytes.count
                    // A one-frame message is routed while its bytes are lent; more parts are rejected below.
                    if !more { route(bytes) }
                })
            else { break }
            if isMultipart {
                // NBP/1 is one frame: drain the remaining parts and reject the message once. The
                // parts are already here (libzmq delivers messages whole): a failure to read one
                // means the socket is closing, which the next read reports.
                while socket.hasMoreParts { _ = try? socket.receive(mode: .dontWait) }
                counters.rejected[.wrongFrameCount, default: 0] += 1
            }
            counters.framesReceived += 1
            counters.notificationsReceived += 1
            count += 1
        }
        return count
    }

    /// Routes one of this bus's own posts, handed over directly instead of through a socket
    /// (an embedded bus's loopback); counted as received like any frame.
    mutating func deliverLocally(_ frame: UnsafeRawBufferPointer) {
        keepIfRetained(frame)
        route(frame)
        counters.framesReceived += 1
        counters.notificationsReceived += 1
    }

    /// `deliverLocally` for a frame some of whose posts are typed posts made with their values
    /// (`values`, by post index; `firstPost` is the frame's first record's): each of those
    /// notifications carries its value (`BusNotification.localValue`), so typed subscriptions take
    /// it without decoding.
    mutating func deliverLocally(
        _ frame: UnsafeRawBufferPointer, firstPost: Int, values: LocalValues
    ) {
        localValues = values
        localFirstPost = firstPost
        defer { localValues = LocalValues() }
        deliverLocally(frame)
    }

    /// Routes one frame as if `read` had read it from `path` at `now` (monotonic ns): the merge
    /// over several paths, fed without sockets (tests).
    mutating func receive(_ frame: UnsafeRawBufferPointer, path: Int, now: UInt64) {
        currentPath = path
        self.now = now
        route(frame)
        counters.framesReceived += 1
        counters.notificationsReceived += 1
    }

    /// Routes one frame to the subscriptions it matches; returns whether any matched.
    @discardableResult
    private mutating func route(_ frame: UnsafeRawBufferPointer) -> Bool {
        // A frame that begins with an exact subscription's `name` + NUL carries that (valid)
        // name: no UTF-8 or grammar check, and the subscription's own name value is reused.
        var nameLength = -1
        var knownName: NotificationName?
        var exactIndex = -1
        for index in routes.indices {
            guard routes[index].isExact, frame.hasPrefix(routes[index].prefix) else { continue }
            nameLength = routes[index].prefix.count - 1
            knownName = routes[index].exactName
            exactIndex = index
            break
        }
        if nameLength < 0 {
            do {
                nameLength = try EnvelopeCodec.nameLength(in: frame)
            } catch {
                counters.rejected[error, default: 0] += 1
                return false
            }
        }
        let nameBytes = UnsafeRawBufferPointer(rebasing: frame[0..<nameLength])
        if nameBytes.first == UInt8(ascii: "_"), ControlNames.isReserved(nameBytes: nameBytes) {
            if EnvelopeCodec.isBatch(frame, nameLength: nameLength) {
                // Control messages are never batched (NBP-1 §2.3): this is no readiness echo or
                // end of stream, and acting on it would let a peer forge one; a malformed batch
                // (§7.5, step B0), rejected and counted like any other.
                counters.rejected[.batchInvalid, default: 0] += 1
                counters.rejectedBatchNotifications += UInt64(
                    EnvelopeCodec.declaredRecordCount(in: frame, nameLength: nameLength) ?? 0)
                return false
            }
            if nameBytes.starts(with: ControlNames.readyPrefix) {
                readyTokens.append(Array(nameBytes))
                return false
            }
            if nameBytes.starts(with: ControlNames.endOfStreamPrefix) {
                return handleEndOfStream(frame, nameLength: nameLength)
            }
            if nameBytes.starts(with: RetainedSnapshot.replyPrefix) {
                return receiveSnapshot(frame, nameLength: nameLength)
            }
            // A control message this version does not know (NBP-1 §13: new ones may be added
            // under `_nbus` without a new version): never handed to the application.
            counters.unknownControlMessages += 1
            return false
        }
        // A batch frame (NBP-1 §2.3) counts as its notifications wherever a count is read as
        // notifications (filtered out, unmatched), the frame only in `framesReceived`: the count
        // it declares, but no more than its bytes can hold (`declaredRecordCount`).
        let isBatch = EnvelopeCodec.isBatch(frame, nameLength: nameLength)
        let declared = isBatch ? UInt64(EnvelopeCodec.declaredRecordCount(in: frame, nameLength: nameLength) ?? 1) : 1
        counters.notificationsReceived += declared - 1  // the frame itself is counted by the caller
        var matchedFirst = -1
        var matchedLast = -1
        // The exact route found above matches without comparing its prefix again.
        for index in routes.indices where index == exactIndex || frame.hasPrefix(routes[index].prefix) {
            if routes[index].isExact || routes[index].pattern.matches(nameBytes: nameBytes) {
                if matchedFirst < 0 { matchedFirst = index }
                matchedLast = index
            } else {
                routes[index].batch.filteredOut += declared
            }
        }
        guard matchedFirst >= 0 else {
            counters.unmatched += declared
            return false
        }
        if isBatch {
            if pathCount > 1 {
                let name = knownName ?? NotificationName(validatedBytes: nameBytes)
                if discardBatchIfCopy(frame, nameLength: nameLength, name: name) { return false }
                knownName = name
            }
            return routeBatch(
                frame, nameLength: nameLength, knownName: knownName, matched: matchedFirst...matchedLast,
                exactIndex: exactIndex)
        }
        if pathCount > 1 {
            // A copy another path brought first: discarded before it costs a decode.
            let name = knownName ?? NotificationName(validatedBytes: nameBytes)
            if discardIfCopy(frame, nameLength: nameLength, name: name) { return false }
            knownName = name
        }
        let notification: BusNotification
        do {
            notification = withLocalValue(
                try EnvelopeCodec.decode(
                    frame, validatedNameLength: nameLength, name: knownName, maximumPayload: maximumPayload,
                    maximumHeaderCount: maximumHeaderCount))
        } catch {
            counters.rejected[error, default: 0] += 1
            return false
        }
        if pathCount > 1 {
            let targets = targets(in: matchedFirst...matchedLast, frame: frame, nameBytes: nameBytes, exactIndex: exactIndex)
            return merge(notification, targets: targets)
        }
        let (fresh, gap) = track(notification)
        guard fresh else { return false }
        if matchedFirst < matchedLast {
            for index in matchedFirst..<matchedLast
            where index == exactIndex || frame.hasPrefix(routes[index].prefix)
                && (routes[index].isExact || routes[index].pattern.matches(nameBytes: nameBytes))
            {
                if let gap { routes[index].batch.append(gap: gap) }
                routes[index].batch.append(notification: notification)
            }
        }
        if let gap { routes[matchedLast].batch.append(gap: gap) }
        // Moved, not copied: the last (usually only) subscription takes this value itself, which
        // spares a retain and a release of the payload per frame (measured in the profile).
        routes[matchedLast].batch.append(notification: consume notification)
        return true
    }

    /// Delivers a batch frame's notifications, in order, to the subscriptions in `matched` that
    /// match its name, tracking each one's sequence (a gap inside a batch or between batches is
    /// found as between single frames). A malformed batch is rejected whole and counted once
    /// under its reason; the notifications its header declared (no more than its bytes can hold:
    /// a peer's lying count must not inflate the metric) go to `rejectedBatchNotifications`, and,
    /// never tracked, show up as a gap at the stream's next notification.
    private mutating func routeBatch(
        _ frame: UnsafeRawBufferPointer, nameLength: Int, knownName: NotificationName?, matched: ClosedRange<Int>,
        exactIndex: Int
    ) -> Bool {
        var notifications: [BusNotification]
        do {
            notifications = try EnvelopeCodec.decodeBatch(
                frame, validatedNameLength: nameLength, name: knownName, maximumPayload: maximumPayload,
                maximumHeaderCount: maximumHeaderCount)
        } catch {
            counters.rejected[error, default: 0] += 1
            counters.rejectedBatchNotifications += UInt64(
                EnvelopeCodec.declaredRecordCount(in: frame, nameLength: nameLength) ?? 0)
            return false
        }
        if !localValues.isEmpty {
            for index in notifications.indices { notifications[index].localValue = localValues[localFirstPost + index] }
        }
        let nameBytes = UnsafeRawBufferPointer(rebasing: frame[0..<nameLength])
        // The routes this name matches (the same for every record: one name).
        let targets = targets(in: matched, frame: frame, nameBytes: nameBytes, exactIndex: exactIndex)
        if pathCount > 1, let first = notifications.first {
            // One stream (a batch is one publisher's, of one name): one lookup for the whole batch.
            let key = StreamKey(publisherID: first.publisherID, name: first.name)
            connectedPaths |= 1 << UInt64(currentPath)
            if let last = notifications.last, Self.areConsecutive(notifications),
                merged.receivedInOrder(
                    key, first: first.sequence, last: last.sequence, path: currentPath, heard: counters.framesReceived)
            {
                // The common case: the next ones of a stream that waits for nothing, handed on as
                // with one path.
                for notification in notifications { deliverMerged(notification, key: key, targets: targets) }
                return true
            }
            var dispositions: [PathMergeStateMachine<BusNotification>.Disposition] = []
            swap(&dispositions, &mergeDispositions)
            let forgotten = merged.received(
                notifications, key: key, path: currentPath, now: now, connected: connectedPaths,
                heard: counters.framesReceived, into: &dispositions)
            counters.streamsForgotten += UInt64(forgotten)
            var any = false
            for disposition in dispositions where carryOut(disposition, key: key, targets: targets) { any = true }
            dispositions.removeAll(keepingCapacity: true)
            swap(&dispositions, &mergeDispositions)
            return any
        }
        // Moved out of the array into the last target's batch (copied only for the others): a
        // copy per notification retained and released each of its fields.
        notifications.reverse()
        while let notification = notifications.popLast() {
            let (fresh, gap) = track(notification)
            guard fresh, let last = targets.last else { continue }
            for index in targets.dropLast() {
                if let gap { routes[index].batch.append(gap: gap) }
                routes[index].batch.append(notification: notification)
            }
            if let gap { routes[last].batch.append(gap: gap) }
            routes[last].batch.append(notification: consume notification)
        }
        return true
    }

    /// Whether the notifications' sequence numbers run up by one each.
    private static func areConsecutive(_ notifications: [BusNotification]) -> Bool {
        guard var previous = notifications.first?.sequence else { return false }
        for notification in notifications.dropFirst() {
            guard notification.sequence == previous &+ 1 else { return false }
            previous = notification.sequence
        }
        return true
    }

    /// The routes in `matched` whose pattern matches the frame's name.
    private func targets(in matched: ClosedRange<Int>, frame: UnsafeRawBufferPointer, nameBytes: UnsafeRawBufferPointer, exactIndex: Int) -> [Int] {
        var targets: [Int] = []
        for index in matched
        where index == exactIndex || frame.hasPrefix(routes[index].prefix)
            && (routes[index].isExact || routes[index].pattern.matches(nameBytes: nameBytes))
        {
            targets.append(index)
        }
        return targets
    }

    /// One path: whether `notification` is new (a duplicate is counted and must be dropped),
    /// and the gap before it, if any.
    private mutating func track(_ notification: BusNotification) -> (fresh: Bool, gap: Gap?) {
        switch trackSequence(publisherID: notification.publisherID, name: notification.name, sequence: notification.sequence) {
        case .inOrder: return (true, nil)
        case .gap(let gap): return (true, gap)
        case .duplicate:
            counters.duplicatesDiscarded += 1
            return (false, nil)
        }
    }

    /// What one notification's sequence number says about its stream (one path).
    enum Tracking {
        case inOrder
        case gap(Gap)
        /// At or below what the stream already brought: a repeat, never delivered (NBP-1 §8).
        case duplicate
    }

    /// NBP/1 gap detection per (publisher, name), one path: the first message of a stream is
    /// never a loss; a jump forward is; a repeat or step back is a duplicate, discarded and
    /// counted (a peer replaying a stream must not make this bus deliver it twice).
    mutating func trackSequence(publisherID: UInt64, name: NotificationName, sequence: UInt64) -> Tracking {
        let last: UInt64
        if let cached = cachedStream, cached.key.publisherID == publisherID, cached.key.name == name {
            last = cached.last
        } else {
            spillCachedStream()
            let key = StreamKey(publisherID: publisherID, name: name)
            guard let tracked = lastSequence.removeValue(forKey: key) else {
                cachedStream = (key, sequence)
                // Not a loss (NBP-1 §8: a late join looks the same), but not silent either.
                // Saturating: a peer's sequence may be anything up to 2^64 - 1 (a conformance
                // vector's two such streams overflowed the sum and trapped the process).
                if sequence > 1 {
                    counters.streamsJoinedLate &+= 1
                    let (sum, overflow) = counters.notificationsBeforeJoining.addingReportingOverflow(sequence - 1)
                    counters.notificationsBeforeJoining = overflow ? .max : sum
                }
                return .inOrder
            }
            cachedStream = (key, tracked.last)
            last = tracked.last
        }
        guard sequence > last else { return .duplicate }
        cachedStream?.last = sequence
        guard sequence > last + 1 else { return .inOrder }
        let count = sequence - last - 1
        counters.lostUpstream += count
        return .gap(
            Gap(
                cause: .lostUpstream, count: count, name: name, publisherID: publisherID,
                sequences: (last + 1)...(sequence - 1)))
    }

    // MARK: Several paths

    /// Several paths: hands `notification` to its stream's `PathMergeStateMachine` and carries
    /// out what it says for the routes in `targets`. Returns whether anything was delivered.
    private mutating func merge(_ notification: BusNotification, targets: [Int]) -> Bool {
        let key = StreamKey(publisherID: notification.publisherID, name: notification.name)
        // A path that brings a notification is connected, whatever its monitor said last.
        connectedPaths |= 1 << UInt64(currentPath)
        let (disposition, forgotten) = merged.received(
            notification, key: key, path: currentPath, now: now, connected: connectedPaths, heard: counters.framesReceived)
        counters.streamsForgotten += UInt64(forgotten)
        return carryOut(disposition, key: key, targets: targets)
    }

    /// Carries out what a stream's merge said about one notification, for the routes in
    /// `targets`. Returns whether anything was delivered.
    private mutating func carryOut(
        _ disposition: PathMergeStateMachine<BusNotification>.Disposition, key: StreamKey, targets: [Int]
    ) -> Bool {
        switch disposition {
        case .deliver(let notification):
            deliverMerged(notification, key: key, targets: targets)
            return true
        case .duplicate:
            counters.duplicatesDiscarded += 1
            return false
        case .held:
            return false
        case .steps(let steps):
            apply(steps, key: key)
            return true
        }
    }

    /// Several paths: whether a version 1 frame of stream `name` is a copy another path brought
    /// first; if so it is discarded undecoded and counted. Only a frame the decode would accept
    /// is discarded (a malformed one goes on to the decode, which rejects and counts it).
    private mutating func discardIfCopy(_ frame: UnsafeRawBufferPointer, nameLength: Int, name: NotificationName) -> Bool {
        guard let (publisherID, sequence) = EnvelopeCodec.peekStream(frame, nameLength: nameLength) else { return false }
        let key = StreamKey(publisherID: publisherID, name: name)
        guard merged.isDuplicate(key, sequence: sequence),
            EnvelopeCodec.isAcceptable(
                frame, validatedNameLength: nameLength, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount),
            merged.discardCopy(key, lowest: sequence, highest: sequence, path: currentPath, heard: counters.framesReceived)
        else { return false }
        connectedPaths |= 1 << UInt64(currentPath)
        counters.duplicatesDiscarded += 1
        return true
    }

    /// Several paths: whether a batch frame (NBP-1 §2.3) of stream `name` holds only copies
    /// another path brought first; if so it is discarded undecoded, each of its notifications
    /// counted as a duplicate. Its first record is looked at first (a batch that starts with a
    /// new notification is decoded at once); a batch that may be a copy is walked whole and
    /// checked as the decode would check it, so a malformed one goes on to be rejected and
    /// counted, never discarded as a duplicate.
    private mutating func discardBatchIfCopy(_ frame: UnsafeRawBufferPointer, nameLength: Int, name: NotificationName) -> Bool {
        guard let (publisherID, first) = EnvelopeCodec.peekBatchStart(frame, nameLength: nameLength) else { return false }
        let key = StreamKey(publisherID: publisherID, name: name)
        guard merged.isDuplicate(key, sequence: first) else { return false }
        // The walk reads each record's lengths to find the next: without this, it waits for
        // each record's cache line in turn (91% of the walk's time in the profile). Prefetched:
        // where the records' fixed parts lie if they are all of one size (a publisher's batch of
        // like notifications), those lines only; a wrong guess costs a few useless hints.
        if let base = frame.baseAddress, let count = EnvelopeCodec.declaredRecordCount(in: frame, nameLength: nameLength) {
            let firstRecord = nameLength + 1 + WireFormat.batchHeaderSize
            let size = (frame.count - firstRecord) / count
            var position = firstRecord
            for _ in 0..<count where position < frame.count {
                prefetchForReading(base + position, count: WireFormat.batchRecordHeaderSize)
                position += size
            }
        }
        guard let batch = EnvelopeCodec.peekBatch(
                frame, validatedNameLength: nameLength, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount),
            merged.discardCopy(
                key, lowest: batch.lowestSequence, highest: batch.highestSequence, path: currentPath,
                heard: counters.framesReceived)
        else { return false }
        connectedPaths |= 1 << UInt64(currentPath)
        counters.duplicatesDiscarded += UInt64(batch.recordCount)
        return true
    }

    /// Delivers a merge's steps to every route matching the stream's name, gaps counted.
    private mutating func apply(_ steps: [PathMergeStateMachine<BusNotification>.Step], key: StreamKey) {
        guard !steps.isEmpty else { return }
        let targets = routes.indices.filter { routes[$0].pattern.matches(key.name) }
        for step in steps {
            switch step {
            case .deliver(let notification):
                deliverMerged(notification, key: key, targets: targets)
            case .gap(let range):
                let gap = Gap(
                    cause: .lostUpstream, count: range.upperBound - range.lowerBound + 1, name: key.name,
                    publisherID: key.publisherID, sequences: range)
                counters.lostUpstream += gap.count
                for index in targets { routes[index].batch.append(gap: gap) }
            }
        }
    }

    /// A path's connection came up or went down (its socket monitor said so). A path that went
    /// down can bring nothing more: holes only it could fill are declared now.
    mutating func setPath(_ path: Int, connected: Bool, now: UInt64) {
        guard path >= 0 && path < pathCount else { return }
        let bit: UInt64 = 1 << UInt64(path)
        let before = connectedPaths
        connectedPaths = connected ? connectedPaths | bit : connectedPaths & ~bit
        guard connectedPaths != before, !connected else { return }
        settleMergedStreams(now: now, all: true)
    }

    /// When the earliest wait for a hole ends (monotonic ns), if any stream is waiting.
    var nextGapDeadline: UInt64? {
        merged.nextDeadline
    }

    /// Declares the holes whose wait ended by `now` (the loop calls it every round while any
    /// stream waits). `all`: every waiting stream is looked at, for a path that went down.
    mutating func settleMergedStreams(now: UInt64, all: Bool = false) {
        for (key, steps) in merged.settle(now: now, connected: connectedPaths, all: all) { apply(steps, key: key) }
    }

    /// Several paths: an end-of-stream entry for one stream arrived on the current path.
    private mutating func mergeEndOfStream(key: StreamKey, last: UInt64) -> Bool {
        let steps = merged.endOfStream(key, last: last, path: currentPath, now: now, connected: connectedPaths)
        apply(steps, key: key)
        return steps.contains { if case .gap = $0 { true } else { false } }
    }

    /// A publisher closed: every stream of it whose last sequence is beyond what arrived here
    /// lost its tail. Reports those gaps to the matching subscriptions and forgets the streams.
    private mutating func handleEndOfStream(_ frame: UnsafeRawBufferPointer, nameLength: Int) -> Bool {
        let notification: BusNotification
        do {
            notification = try EnvelopeCodec.decode(frame, validatedNameLength: nameLength, name: nil, maximumPayload: Int.max)
        } catch {
            counters.rejected[error, default: 0] += 1
            return false
        }
        counters.endOfStreamRecords += 1
        spillCachedStream()
        var anyGap = false
        let (entries, malformed) = EndOfStream.parse(notification.payload)
        // The entries before a malformed one apply (NBP-1 §15.1); the rest is lost to this
        // receiver, which says so by counting the record.
        if malformed { counters.malformedEndOfStreamRecords += 1 }
        if pathCount > 1 { now = Timestamps.monotonicNanoseconds() }
        for (name, last) in entries {
            let key = StreamKey(publisherID: notification.publisherID, name: name)
            if pathCount > 1 {
                if mergeEndOfStream(key: key, last: last) { anyGap = true }
                continue
            }
            let removed = lastSequence.removeValue(forKey: key)?.last
            if let removed { rememberEnded(key, last: removed) }
            guard let tracked = removed, last > tracked else { continue }
            let gap = Gap(
                cause: .lostUpstream, count: last - tracked, name: name, publisherID: notification.publisherID,
                sequences: (tracked + 1)...last)
            counters.lostUpstream += gap.count
            for index in routes.indices where routes[index].pattern.matches(name) {
                routes[index].batch.append(gap: gap)
                anyGap = true
            }
        }
        // Acknowledged only by a receiver with a subscription matching a stream the record (or an
        // earlier part of it) closes: the publisher waits for those alone (NBP-1 §15), and every
        // acknowledgement travels to every publisher behind a broker.
        if entries.contains(where: { entry in routes.contains { $0.pattern.matches(entry.0) } }) {
            // Bounded: records from ids that never send a final part (a hostile peer) must not grow it.
            if endOfStreamMatched.count >= 4_096 { endOfStreamMatched.removeAll() }
            endOfStreamMatched.insert(notification.publisherID)
        }
        if notification.headers["final"] != nil, endOfStreamMatched.remove(notification.publisherID) != nil {
            endOfStreamAcknowledgements.append(notification.publisherID)
        }
        return anyGap
    }

    /// Moves the cached stream back into `lastSequence`, first forgetting the least recently heard
    /// tenth of the table when it is full (the cached stream counts as one of the tracked).
    private mutating func spillCachedStream() {
        guard let cached = cachedStream else { return }
        cachedStream = nil
        if lastSequence.count >= maximumTrackedStreams - 1 { forgetStalestStreams() }
        lastSequence[cached.key] = (cached.last, counters.framesReceived)
    }

    /// Forgets a tenth of the tracked streams (at least one), the least recently heard, and counts
    /// them. Sorting once per tenth keeps the cost per new stream logarithmic on average.
    private mutating func forgetStalestStreams() {
        let count = max(1, maximumTrackedStreams / 10)
        let stalest = lastSequence.sorted { $0.value.heard < $1.value.heard }.prefix(count)
        for entry in stalest { lastSequence.removeValue(forKey: entry.key) }
        counters.streamsForgotten += UInt64(stalest.count)
    }

    /// Streams tracked now, the cached one included.
    /// (Several paths: a stream whose end of stream came is not counted while it waits for the
    /// other paths' copies: its tail is known.)
    var trackedStreams: Int { lastSequence.count + merged.tracked + (cachedStream == nil ? 0 : 1) }

    // MARK: Handing over

    /// Hands every subscription its batch (one lock each, which also says the room it has
    /// left); returns whether reading must pause (a `suspendProducer` subscription is full), and
    /// pauses it then. The least room bounds the next round (`read`).
    @discardableResult
    mutating func flush() -> Bool {
        var least = ReadingRoom.unbounded
        for index in routes.indices {
            if !routes[index].batch.isEmpty {
                routes[index].room = routes[index].storage.append(&routes[index].batch)
                routes[index].batch.reset()
            }
            least = least.narrowed(to: routes[index].room)
        }
        readingRoom = least
        guard least.isExhausted else { return false }
        readingPaused = true
        return true
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes begin with `prefix` (one `memcmp`).
    @inline(__always)
    func hasPrefix(_ prefix: UnsafeRawBufferPointer) -> Bool {
        guard prefix.count <= count else { return false }
        guard let base = baseAddress, let prefixBase = prefix.baseAddress else { return true }
        return memcmp(base, prefixBase, prefix.count) == 0
    }
}
