/// A subscriber's streams heard over several paths (a bus connected to two or more brokers,
/// NBP-1 §17): one `PathMergeStateMachine` per (publisher, name), and which of them matter to
/// the clock. Owns the table and keeps its invariants: a stream is in `waiting` exactly when
/// its merge holds notifications back or awaits a tail (its deadline counts), and in `ended`
/// when its end-of-stream record came while a path may still bring copies; both are subsets of
/// the table, and a stream leaves all three at once. The receiver applies the steps returned.
struct MergedStreams {
    typealias Key = BusReceiver.StreamKey
    typealias Merge = PathMergeStateMachine<BusNotification>

    private struct Stream {
        var merge: Merge
        /// When last heard (`BusStats.framesReceived` then), to forget the stalest first.
        var heard: UInt64

        /// Feeds the merge in place (no copy of its held notifications); returns its disposition
        /// and whether the stream waited before and waits now.
        mutating func received(
            _ notification: BusNotification, path: Int, now: UInt64, connected: UInt64, gapTimeout: UInt64, heard: UInt64,
            pathsReadAt: UInt64
        ) -> (Merge.Disposition, wasWaiting: Bool, isWaiting: Bool) {
            self.heard = heard
            let wasWaiting = merge.isWaiting
            let disposition = merge.received(
                notification, sequence: notification.sequence, path: path, now: now, connected: connected,
                gapTimeout: gapTimeout, pathsReadAt: pathsReadAt)
            return (disposition, wasWaiting, merge.isWaiting)
        }
    }

    private var streams: [Key: Stream] = [:]
    /// Streams whose merged start was past sequence 1, and the notifications before each start
    /// (`BusStats.streamsJoinedLate`, `notificationsBeforeJoining`, as one path counts them).
    private(set) var streamsJoinedLate: UInt64 = 0
    private(set) var notificationsBeforeJoining: UInt64 = 0

    /// Counts a start that a call on `merge` made (it was not started before).
    private mutating func noteStart(wasStarted: Bool, _ merge: Merge) {
        guard !wasStarted, merge.started, merge.startSequence > 1 else { return }
        streamsJoinedLate &+= 1
        let (sum, overflow) = notificationsBeforeJoining.addingReportingOverflow(merge.startSequence - 1)
        notificationsBeforeJoining = overflow ? .max : sum
    }
    private var waiting: Set<Key> = []
    private var ended: Set<Key> = []
    /// When the receiver last read the paths' monitors (monotonic ns; `.max`: the connection
    /// mask it passes is always current): a path that is down is not waited for at a stream's
    /// start only once this passed the stream's first arrival (`PathMergeStateMachine.settle`).
    var pathsReadAt: UInt64 = .max
    /// Paths per stream.
    let paths: Int
    /// `BusConfiguration.maximumTrackedStreams`: past it the least recently heard tenth is forgotten.
    let maximumTracked: Int
    /// How long a hole one path left is waited for while another can still fill it (ns).
    let gapTimeout: UInt64

    init(paths: Int, maximumTracked: Int, gapTimeout: UInt64) {
        self.paths = paths
        self.maximumTracked = maximumTracked
        self.gapTimeout = gapTimeout
    }

    /// Streams tracked, not counting those whose end of stream came (their tail is known).
    var tracked: Int { streams.count - ended.count }

    /// Whether a stream that has not started waits for a reading of the paths' monitors taken
    /// after its first arrival (a path it would not wait for if that path is really down): the
    /// loop then reads them at once rather than at its next look, or a broker down would delay
    /// every stream joined mid-way by the whole start wait.
    var startAwaitsPathReading: Bool {
        guard pathsReadAt != .max else { return false }
        return waiting.contains { key in
            guard let merge = streams[key]?.merge, !merge.started, let since = merge.waitingSince else { return false }
            return pathsReadAt <= since
        }
    }

    /// When the earliest wait for a hole ends (monotonic ns), if any stream is waiting.
    var nextDeadline: UInt64? {
        waiting.compactMap { streams[$0]?.merge.deadline(gapTimeout: gapTimeout) }.min()
    }

    /// Whether `sequence` of `key` is a copy another path brought first.
    func isDuplicate(_ key: Key, sequence: UInt64) -> Bool {
        streams[key]?.merge.isDuplicate(sequence) == true
    }

    /// How far each started stream `pattern` matches has been handed on (a retained
    /// subscription's baseline: what reached the bus live before it was made).
    func handedOn(matching pattern: NamePattern) -> [Key: UInt64] {
        var positions: [Key: UInt64] = [:]
        for (key, stream) in streams where stream.merge.started && pattern.matches(key.name) {
            positions[key] = stream.merge.delivered
        }
        return positions
    }

    /// How far `key` has been handed on; nil before it started (or when it is not tracked).
    func handedOn(_ key: Key) -> UInt64? {
        guard let stream = streams[key], stream.merge.started else { return nil }
        return stream.merge.delivered
    }

    /// A copy of `key` holding sequence numbers `lowest` to `highest` arrived on `path`, not
    /// decoded: whether it brings nothing new, to be discarded unread (then the path is noted as
    /// having passed `highest`, and the stream as heard: `PathMergeStateMachine.discardCopy`).
    mutating func discardCopy(_ key: Key, lowest: UInt64, highest: UInt64, path: Int, heard: UInt64) -> Bool {
        ifKnown(key, heard: heard) { $0.discardCopy(lowest: lowest, highest: highest, path: path) }
    }

    /// One notification of `key` arrived on `path`, `heard` being the frame count now; a new
    /// stream in a full table first makes room. Returns what became of it and how many streams
    /// were forgotten to make room.
    mutating func received(
        _ notification: BusNotification, key: Key, path: Int, now: UInt64, connected: UInt64, heard: UInt64
    ) -> (disposition: Merge.Disposition, forgotten: Int) {
        let (index, forgotten) = streamIndex(key, heard: heard, now: now)
        let wasStarted = streams.values[index].merge.started
        let (disposition, wasWaiting, isWaiting) = streams.values[index].received(
            notification, path: path, now: now, connected: connected, gapTimeout: gapTimeout, heard: heard,
            pathsReadAt: pathsReadAt)
        if !wasStarted { noteStart(wasStarted: false, streams.values[index].merge) }
        // Only a change costs a hash of the key (the common case: not waiting before nor after).
        if wasWaiting != isWaiting { noteWaiting(key, isWaiting) }
        return (disposition, forgotten)
    }

    /// A batch's notifications numbered `first` to `last`, each once and in order, arrived on
    /// `path`: true when the stream is known and they are simply its next ones, then taken as
    /// handed on (`PathMergeStateMachine.receivedInOrder`); false changes nothing.
    mutating func receivedInOrder(_ key: Key, first: UInt64, last: UInt64, path: Int, heard: UInt64) -> Bool {
        ifKnown(key, heard: heard) { $0.receivedInOrder(first: first, last: last, path: path) }
    }

    /// Runs `body` on a known stream's merge (one lookup); when it says yes, the stream was heard
    /// now. An unknown stream: false, nothing changes.
    private mutating func ifKnown(_ key: Key, heard: UInt64, _ body: (inout Merge) -> Bool) -> Bool {
        guard let index = streams.index(forKey: key), body(&streams.values[index].merge) else { return false }
        streams.values[index].heard = heard
        return true
    }

    /// The notifications of one batch frame (all of `key`, in order) arrived on `path`: appends
    /// each one's disposition to `dispositions`, in order, as `received` one by one would give
    /// them, for one lookup of the stream instead of one per notification. Returns how many
    /// streams were forgotten to make room.
    mutating func received(
        _ notifications: [BusNotification], key: Key, path: Int, now: UInt64, connected: UInt64, heard: UInt64,
        into dispositions: inout [Merge.Disposition]
    ) -> Int {
        guard !notifications.isEmpty else { return 0 }
        let (index, forgotten) = streamIndex(key, heard: heard, now: now)
        let wasWaiting = streams.values[index].merge.isWaiting
        let wasStarted = streams.values[index].merge.started
        defer { noteStart(wasStarted: wasStarted, streams.values[index].merge) }
        for notification in notifications {
            dispositions.append(
                streams.values[index].received(
                    notification, path: path, now: now, connected: connected, gapTimeout: gapTimeout, heard: heard,
                    pathsReadAt: pathsReadAt
                ).0)
        }
        let isWaiting = streams.values[index].merge.isWaiting
        if wasWaiting != isWaiting { noteWaiting(key, isWaiting) }
        return forgotten
    }

    /// Where `key`'s stream is in the table, added if new (a full table first forgets the ended
    /// streams no path can bring more of, then, if still full, its stalest tenth, whose count is
    /// returned). One hash of the key for a known stream.
    private mutating func streamIndex(
        _ key: Key, heard: UInt64, now: UInt64
    ) -> (index: [Key: Stream].Index, forgotten: Int) {
        if let index = streams.index(forKey: key) { return (index, 0) }
        if streams.count >= maximumTracked { forgetFinished(now: now) }
        let forgotten = streams.count >= maximumTracked ? forgetStalest() : 0
        streams[key] = Stream(merge: Merge(paths: paths), heard: heard)
        guard let index = streams.index(forKey: key) else { preconditionFailure("a stream just added is in the table") }
        return (index, forgotten)
    }

    /// An end-of-stream entry for `key` arrived on `path`: the steps it settles (none for a
    /// stream not tracked). A stream no path can bring more of is forgotten.
    mutating func endOfStream(_ key: Key, last: UInt64, path: Int, now: UInt64, connected: UInt64) -> [Merge.Step] {
        guard var stream = streams[key] else { return [] }
        let wasStarted = stream.merge.started
        let steps = stream.merge.endOfStream(
            last: last, path: path, now: now, connected: connected, gapTimeout: gapTimeout, pathsReadAt: pathsReadAt)
        noteStart(wasStarted: wasStarted, stream.merge)
        if stream.merge.isFinished(now: now, gapTimeout: gapTimeout) {
            forget(key)
        } else {
            streams[key] = stream
            ended.insert(key)
            noteWaiting(key, stream.merge.isWaiting)
        }
        return steps
    }

    /// Declares the holes whose wait ended by `now`; `all`: every waiting stream is looked at (a
    /// path went down). Ended streams no path can bring more of are forgotten. Returns each
    /// settled stream's steps, in the order they were settled.
    mutating func settle(now: UInt64, connected: UInt64, all: Bool) -> [(key: Key, steps: [Merge.Step])] {
        guard !waiting.isEmpty || (all && !ended.isEmpty) else { return [] }
        var settled: [(key: Key, steps: [Merge.Step])] = []
        for key in waiting {
            guard var stream = streams[key] else { continue }
            if !all, let deadline = stream.merge.deadline(gapTimeout: gapTimeout), deadline > now { continue }
            let wasStarted = stream.merge.started
            let steps = stream.merge.settle(now: now, connected: connected, gapTimeout: gapTimeout, pathsReadAt: pathsReadAt)
            noteStart(wasStarted: wasStarted, stream.merge)
            streams[key] = stream
            settled.append((key, steps))
            if !stream.merge.isWaiting { waiting.remove(key) }
        }
        forgetFinished(now: now)
        return settled
    }

    /// Forgets the ended streams no path can bring a copy of any more (not counted as forgotten:
    /// nothing of them is left to track).
    private mutating func forgetFinished(now: UInt64) {
        for key in ended where streams[key]?.merge.isFinished(now: now, gapTimeout: gapTimeout) ?? true { forget(key) }
    }

    /// Forgets every stream `isOrphaned` names (those no remaining subscription matches), with
    /// their waits.
    mutating func forgetStreams(where isOrphaned: (Key) -> Bool) {
        guard !streams.isEmpty else { return }
        streams = streams.filter { key, _ in !isOrphaned(key) }
        waiting = waiting.filter { streams[$0] != nil }
        ended = ended.filter { streams[$0] != nil }
    }

    /// Forgets the least recently heard tenth of the table (at least one); returns how many.
    private mutating func forgetStalest() -> Int {
        let count = max(1, maximumTracked / 10)
        let stalest = streams.sorted { $0.value.heard < $1.value.heard }.prefix(count)
        for entry in stalest { forget(entry.key) }
        return stalest.count
    }

    private mutating func forget(_ key: Key) {
        streams[key] = nil
        waiting.remove(key)
        ended.remove(key)
    }

    private mutating func noteWaiting(_ key: Key, _ isWaiting: Bool) {
        if isWaiting { waiting.insert(key) } else { waiting.remove(key) }
    }
}
