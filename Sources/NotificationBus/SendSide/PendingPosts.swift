import ZeroMQ

/// The publisher side of a bus's event loop: the posts it took from the mailbox, until ZeroMQ
/// has taken (or given up) every one, and their accounting (compare swift-nio's
/// `PendingWritesManager`, which owns a channel's write queue and what it counts). It merges runs
/// of one name into batch frames, hands the posts to local subscriptions first when looped back,
/// tracks each broker's progress with several (NBP-1 §17), and counts what was sent and lost.
/// Sockets come in as arguments: the loop decides when to send; this decides what and counts it.
///
/// Back-pressure: the loop takes more posts only once every post taken so far went to ZeroMQ
/// (`emptyIfAllSent`), so a refusing XPUB leaves them in the bounded mailbox.
struct PendingPosts: ~Copyable {
    /// Send-side counters (`sent`, `framesSent`, `unsent`, `pathDrops`, `pathsParked`), in
    /// notifications (a batch frame as its records) except `framesSent` and `pathsParked`; as
    /// `BusReceiver.counters` for the receive side.
    private(set) var counters = BusStats()
    /// The frames made of the posts taken from the mailbox (`coalesce`); the unsent ones are not
    /// yet accepted by ZeroMQ.
    private var posts = MessageBatch(capacity: 1024)
    /// The posts as taken from the mailbox (their encoded frames back to back), until `coalesce`
    /// makes `posts` of them; swapped with the mailbox's queue, so both buffers are reused.
    private var taken = OutboundPosts()
    /// Whether `posts` holds a batch frame (or lost a post it could not allocate); then
    /// `offsets[i]` is the notifications in its frames before index `i` (one more entry than
    /// frames), which counting reads.
    private var hasBatches = false
    private var offsets: [Int] = []
    /// Looped back: posts already handed to local subscriptions (sent ones are a prefix of them).
    private var routedLocally = 0
    /// Looped back: the values of typed posts among `posts`, by their index as taken (before
    /// `coalesce`: a batch frame's records are then `offsets[i]..<offsets[i + 1]`), handed to
    /// local subscriptions with their frames (`Mailbox.localValues`).
    private var localValues = LocalValues()
    /// With several brokers: each publishing path's progress through `posts`, and whether any
    /// path took the frame at each index.
    private var paths: PublisherPathsStateMachine
    private var pathTook: [Bool] = []
    /// Looped back: only what local subscriptions have had may go out.
    private let loopback: Bool
    /// `configuration.batching.maximumFrameBytes` (0: no batching).
    private let maximumBatchBytes: Int
    /// Wire bytes of the frames ZeroMQ took, in all (each frame with its ZMTP framing, and
    /// CURVE's box when `curve`: `SubscriberBacklogWatch.wireBytes`): what a binding publisher's
    /// subscriber budget counts (`SubscriberBudgetPolicy`), exact because over TCP the bytes a
    /// subscriber acknowledged are subtracted from it. Kept only when `countsBytes`.
    private(set) var bytesSent: UInt64 = 0
    private let countsBytes: Bool
    private let curve: Bool
    /// With `countsBytes`: the wire bytes of `posts`' frames before each index (one more entry
    /// than frames), made at the first send of what was taken (ZeroMQ empties a frame it sends).
    private var byteOffsets: [UInt64] = []

    init(
        loopback: Bool, maximumBatchBytes: Int, paths: Int, pathStallLimit: UInt64, countsBytes: Bool = false,
        curve: Bool = false
    ) {
        self.countsBytes = countsBytes
        self.curve = curve
        self.loopback = loopback
        self.maximumBatchBytes = maximumBatchBytes
        self.paths = PublisherPathsStateMachine(paths: paths > 1 ? paths : 0, limit: paths > 1 ? pathStallLimit : 0)
    }

    /// Whether posts wait for ZeroMQ to take them.
    var hasUnsent: Bool { posts.unsentCount > 0 }

    /// Whether every post goes to several publishing paths (brokers).
    var hasSeveralPaths: Bool { !paths.paths.isEmpty }

    /// Closing: a stalled path is given up on after `nanoseconds` (when shorter than the stall
    /// limit), so the close timeout is spent sending through the others.
    mutating func shortenPathStallLimit(to nanoseconds: UInt64) {
        paths.shortenLimit(to: nanoseconds)
    }

    /// The paths given up on (parked) now.
    var parkedPaths: [Int] { paths.parked }

    // MARK: Taking posts

    /// Once everything taken went to ZeroMQ: lets go of it and returns true (the loop may take
    /// more); otherwise keeps it and returns false.
    mutating func emptyIfAllSent() -> Bool {
        guard posts.unsentCount == 0 else { return false }
        posts.removeAll()
        byteOffsets.removeAll(keepingCapacity: true)
        routedLocally = 0
        if !localValues.isEmpty { localValues.removeAll(keepingCapacity: true) }
        restartPaths()
        return true
    }

    /// Takes the mailbox's posts (under its lock), and the values of its typed posts, leaving it
    /// this side's empty queue; `coalesce` then makes the frames. Only after `emptyIfAllSent`
    /// returned true.
    mutating func take(_ outbound: inout OutboundPosts, localValues values: inout LocalValues) {
        swap(&outbound, &taken)
        if !values.isEmpty { swap(&values, &localValues) }
    }

    /// Closing: once everything taken went out, takes what the mailbox still held too, as it was
    /// posted (not merged); returns whether it did. Looped back, what local subscriptions had
    /// stays counted as theirs (`routedLocally` is kept).
    mutating func takeLeftovers(
        _ queued: inout OutboundPosts, localValues values: inout LocalValues, allocationFailed: (ZMQError) -> Void
    ) -> Bool {
        guard posts.unsentCount == 0 else { return false }
        posts.removeAll()
        swap(&taken, &queued)
        localValues = values
        values = LocalValues()
        byteOffsets.removeAll(keepingCapacity: true)
        restartPaths()
        makeFrames(merging: false, allocationFailed: allocationFailed)
        return true
    }

    /// Counts every post still unsent (here and in `queued`) as unsent and lets go of them.
    mutating func dropUnsent(with queued: inout OutboundPosts) {
        counters.unsent += UInt64(notifications(in: posts.sentCount..<posts.count) + queued.unsentCount + taken.count)
        posts.removeAll()
        queued.removeAll()
        taken.removeAll()
    }

    /// No XPUB: every post taken is unsent.
    mutating func dropAll() {
        counters.unsent += UInt64(notifications(in: posts.sentCount..<posts.count))
        posts.removeAll()
    }

    // MARK: Loopback

    /// Looped back: hands the next posts (at most `limit`) to local subscriptions, which read
    /// them in `receiver`; returns whether there were any.
    mutating func deliverLocally(atMost limit: Int, to receiver: inout BusReceiver) -> Bool {
        guard routedLocally < posts.count else { return false }
        let end = min(posts.count, routedLocally + limit)
        if localValues.isEmpty {
            for index in routedLocally..<end {
                posts.withMessageBytes(at: index) { receiver.deliverLocally($0) }
            }
        } else {
            for index in routedLocally..<end {
                let firstPost = hasBatches ? offsets[index] : index
                posts.withMessageBytes(at: index) {
                    receiver.deliverLocally($0, firstPost: firstPost, values: localValues)
                }
            }
        }
        routedLocally = end
        return true
    }

    /// Looped back: whether every post was handed to local subscriptions.
    var deliveredLocally: Bool { routedLocally == posts.count }

    /// Looped back: whether ZeroMQ took every post local subscriptions had.
    var sentWhatWasDeliveredLocally: Bool { posts.sentCount >= routedLocally }

    // MARK: Sending

    /// Sends in order until ZeroMQ refuses one (it stays queued) or `stopped` (the context was
    /// terminated), `maximumFrames` at most; returns how many frames went (rejected ones
    /// included). A frame ZeroMQ rejects outright cannot be retried: `failed` is told and the
    /// frame counted unsent. With `countsBytes`, `maximumWireBytes` stops it too: a frame goes
    /// only while the wire bytes of those before it in this call are fewer (the last one may pass
    /// it, as the broker's last message before a look does).
    mutating func send(
        on publisher: Socket, mode: BlockingMode, maximumFrames: Int = .max, maximumWireBytes: UInt64 = .max,
        stopped: () -> Bool, failed: (ZMQError) -> Void
    ) -> Int {
        let start = posts.sentCount
        var limit = min(loopback ? routedLocally : posts.count, start + max(0, min(maximumFrames, posts.count)))
        if countsBytes && byteOffsets.count != posts.count + 1 {
            byteOffsets.removeAll(keepingCapacity: true)
            byteOffsets.append(0)
            for index in 0..<posts.count {
                let bytes = posts.withMessageBytes(at: index) { $0.count }
                byteOffsets.append(byteOffsets[index] &+ SubscriberBacklogWatch.wireBytes(bytes, parts: 1, curve: curve))
            }
        }
        if countsBytes && maximumWireBytes != .max && limit > start {
            // The first frame whose predecessors here reach the allowance is not sent (offsets
            // grow: a binary search).
            let base = byteOffsets[start]
            var low = start + 1
            var high = limit
            while low < high {
                let middle = (low + high) / 2
                if byteOffsets[middle] &- base >= maximumWireBytes { high = middle } else { low = middle + 1 }
            }
            limit = maximumWireBytes == 0 ? start : low
        }
        var skipped = 0
        var skippedNotifications = 0
        while posts.sentCount < limit && !stopped() {
            do {
                _ = try publisher.send(&posts, mode: mode, limit: limit)
                break  // everything sent, or refused (would block)
            } catch {
                failed(error)
                skippedNotifications += notifications(in: posts.sentCount..<(posts.sentCount + 1))
                posts.skipNext()
                skipped += 1
            }
        }
        let frames = posts.sentCount - start - skipped
        let sent = notifications(in: start..<posts.sentCount) - skippedNotifications
        counters.sent += UInt64(sent)
        counters.framesSent += UInt64(frames)
        counters.unsent += UInt64(skippedNotifications)
        if countsBytes { bytesSent &+= byteOffsets[posts.sentCount] &- byteOffsets[start] }
        return frames + skipped
    }

    /// A frame the loop sent on the XPUB beside the posts (a readiness token's echo): its wire
    /// bytes count in `bytesSent` too.
    mutating func countSentBeside(frameBytes: Int) {
        if countsBytes { bytesSent &+= SubscriberBacklogWatch.wireBytes(frameBytes, parts: 1, curve: curve) }
    }

    /// Several brokers: hands the posts to every path, each at its own pace, a copy to each (a
    /// shared reference, not a copy of the bytes); returns whether any path took a frame. A path
    /// that took nothing for the stall limit while others carry the stream is parked (`parked`
    /// is told, the first time): what it refuses is dropped for it alone. Once every path is
    /// through, counts `sent` what any path took and `unsent` what none did. `up[i]`: path `i`
    /// has a connection; `covered(path, carriers)`: those paths bring every subscriber `path`
    /// brings; `stopped` and `failed` as for `send` (a rejected frame is dropped for that path).
    mutating func sendToPaths(
        _ publishers: [Socket], now: UInt64, up: [Bool], covered: (Int, [Int]) -> Bool, stopped: () -> Bool,
        failed: (ZMQError) -> Void, parked: (_ path: Int, _ stalledFor: UInt64) -> Void
    ) -> Bool {
        let count = posts.count
        guard posts.sentCount < count else { return false }
        if pathTook.count != count {
            pathTook = Array(repeating: false, count: count)
        }
        var progressed = false
        for path in paths.paths.indices where paths.paths[path].cursor < count {
            let socket = publishers[path]
            let start = paths.paths[path].cursor
            var cursor = start
            while cursor < count && !stopped() {
                do {
                    let sent = try socket.sendCopies(of: posts, from: cursor)
                    for index in cursor..<(cursor + sent) { pathTook[index] = true }
                    cursor += sent
                    break
                } catch {
                    // This path goes without the frame ZeroMQ rejected outright.
                    failed(error)
                    counters.pathDrops += UInt64(notifications(in: cursor..<(cursor + 1)))
                    cursor += 1
                }
            }
            if cursor > start { progressed = true }
            let decision = paths.attempted(path: path, cursor: cursor, count: count, now: now, up: up, covered: covered)
            if case .drop(let newly, let stalledFor) = decision {
                // Given up on: what it refuses now is dropped for it alone (the others carry it).
                if newly {
                    counters.pathsParked += 1
                    parked(path, stalledFor)
                }
                counters.pathDrops += UInt64(notifications(in: cursor..<count))
                progressed = true
            }
        }
        if paths.done == count && count > posts.sentCount {
            // Every path is through: count what reached at least one broker.
            var sent = 0
            var frames = 0
            var unsent = 0
            for index in posts.sentCount..<count {
                let notifications = notifications(in: index..<(index + 1))
                if pathTook[index] {
                    sent += notifications
                    frames += 1
                } else {
                    unsent += notifications
                }
            }
            counters.sent += UInt64(sent)
            counters.framesSent += UInt64(frames)
            counters.unsent += UInt64(unsent)
            posts.markSent(upTo: count)
        }
        return progressed
    }

    /// The posts were emptied or replaced: every path starts at its first frame.
    private mutating func restartPaths() {
        guard !paths.paths.isEmpty else { return }
        paths.restart()
        pathTook.removeAll(keepingCapacity: true)
    }

    /// The notifications in the frames at `range`: one each, batch frames their count. Read
    /// from `offsets`, not the frames: ZeroMQ empties a message it sends.
    private func notifications(in range: Range<Int>) -> Int {
        guard hasBatches else { return range.count }
        return offsets[range.upperBound] - offsets[range.lowerBound]
    }

    // MARK: Batching

    /// Makes the frames ZeroMQ sends (`posts`) of the posts just taken, in order, merging each
    /// run of consecutive posts of one name into one batch frame (NBP-1 §2.3). Only what is
    /// queued already is merged, so batching adds no wait: a post that arrives alone stays alone
    /// (its own message). A run ends at another name, at 1024 posts, or where the frame would
    /// pass `configuration.batching`'s size; a post whose frame alone reaches that size goes
    /// alone. Control names are never merged.
    ///
    /// Costs one copy of each post's bytes, into its batch frame or its own message: the post
    /// was encoded straight into the mailbox's reused buffer, so there is no message per post
    /// to allocate, nor to free here. A run the posting threads already wrote as a batch frame
    /// (`OutboundPosts.appendRecord`, the byte posts with batching on) is copied as a whole, its
    /// posts not looked at. A post queued as a message of its own (large, typed,
    /// retained) goes as it is when alone, with no copy; merged, it is copied into the frame.
    mutating func coalesce(allocationFailed: (ZMQError) -> Void) {
        makeFrames(merging: maximumBatchBytes > 0, allocationFailed: allocationFailed)
    }

    /// `coalesce`, or (`merging` false) every post as its own message.
    private mutating func makeFrames(merging: Bool, allocationFailed: (ZMQError) -> Void) {
        hasBatches = false
        offsets.removeAll(keepingCapacity: true)
        offsets.append(0)
        let count = taken.count
        let maximumBytes = maximumBatchBytes
        var lost = false
        var index = 0
        // The runs the posting threads wrote as batch frames (`OutboundPosts.appendRecord`): the
        // next one's position and first post; the frames before it are merged as before.
        var nextRun = 0
        var nextRunStart = taken.runCount > 0 ? taken.run(at: 0).firstPost : count
        while index < count {
            if index == nextRunStart {
                let run = taken.run(at: nextRun)
                if !appendRun(at: nextRun, merging: merging, allocationFailed: allocationFailed) { lost = true }
                if run.count >= 2 && merging { hasBatches = true }
                index += run.count
                nextRun += 1
                nextRunStart = nextRun < taken.runCount ? taken.run(at: nextRun).firstPost : count
                continue
            }
            let run =
                merging && nextRunStart - index >= 2
                ? runOfOneName(from: index, before: nextRunStart, maximumBytes: maximumBytes)
                : (end: index + 1, nameLength: 0, size: 0)
            if run.end - index >= 2 {
                hasBatches = true
                if !appendBatch(of: index..<run.end, nameLength: run.nameLength, size: run.size, allocationFailed: allocationFailed) {
                    lost = true
                }
            } else if !appendSingle(at: index, allocationFailed: allocationFailed) {
                lost = true
            }
            index = run.end
        }
        taken.removeAll()
        if lost {
            // A post libzmq could not allocate a message for is counted unsent; the frames no
            // longer match post indexes one for one, so counting reads `offsets`, and looped-back
            // typed values (indexed by post) are not used for this batch.
            hasBatches = true
            if !localValues.isEmpty { localValues.removeAll(keepingCapacity: true) }
        }
    }

    /// Appends the post at `index` of `taken` to `posts` as its own message; false when libzmq
    /// could not allocate it (`allocationFailed` is told, the post counted unsent).
    private mutating func appendSingle(at index: Int, allocationFailed: (ZMQError) -> Void) -> Bool {
        if taken.isMessage(at: index) {
            // A message of its own (large, typed, retained): it goes as it is, no copy.
            taken.moveMessage(at: index, to: &posts)
            offsets.append(offsets[offsets.count - 1] + 1)
            return true
        }
        let size = taken.withPostBytes(at: index) { $0.count }
        do {
            var message = try Message(size: size)
            message.withUnsafeMutableBytes { out in
                taken.withPostBytes(at: index) { if !$0.isEmpty { out.copyMemory(from: $0) } }
            }
            posts.append(message)
            offsets.append(offsets[offsets.count - 1] + 1)
            return true
        } catch {
            allocationFailed(error)
            counters.unsent += 1
            return false
        }
    }

    /// Where the run of posts of one name that starts at `start` ends (at `runLimit` at the
    /// latest: where the next run of records begins), the name's length, and the size of its
    /// batch frame.
    private func runOfOneName(
        from start: Int, before runLimit: Int, maximumBytes: Int
    ) -> (end: Int, nameLength: Int, size: Int) {
        taken.withPostBytes(at: start) { first -> (end: Int, nameLength: Int, size: Int) in
            let alone = (end: start + 1, nameLength: 0, size: 0)
            let limit = min(first.count, WireFormat.maximumNameLength + 1)
            var nameLength = 0
            while nameLength < limit && first[nameLength] != 0 { nameLength += 1 }
            let headerEnd = nameLength + 1 + WireFormat.fixedHeaderSize
            guard nameLength < limit, first.count >= headerEnd, first.count < maximumBytes,
                first[nameLength + 1] == WireFormat.version,
                !ControlNames.isReserved(nameBytes: UnsafeRawBufferPointer(rebasing: first[0..<nameLength]))
            else { return alone }
            // Name, NUL and publisher id: the same in every record of a batch.
            let publisherOffset = nameLength + 1 + WireFormat.FixedHeaderOffset.publisherID
            let publisher = UnsafeRawBufferPointer(rebasing: first[publisherOffset..<(publisherOffset + 8)])
            let name = UnsafeRawBufferPointer(rebasing: first[0...nameLength])
            var size = nameLength + 1 + WireFormat.batchHeaderSize
                + EnvelopeCodec.batchedRecordSize(ofFrameCount: first.count, nameLength: nameLength)
            var end = start + 1
            while end < runLimit && end - start < WireFormat.maximumBatchRecords {
                let next = taken.withPostBytes(at: end) { frame -> Int? in
                    guard frame.count >= headerEnd, frame.hasPrefix(name), frame[nameLength + 1] == WireFormat.version,
                        UnsafeRawBufferPointer(rebasing: frame[publisherOffset..<(publisherOffset + 8)])
                            .elementsEqual(publisher)
                    else { return nil }
                    return EnvelopeCodec.batchedRecordSize(ofFrameCount: frame.count, nameLength: nameLength)
                }
                guard let next, size + next <= maximumBytes else { break }
                size += next
                end += 1
            }
            return end - start >= 2 ? (end, nameLength, size) : alone
        }
    }

    /// Appends to `posts` the run of records at `position` of `taken`: as it is, one batch frame
    /// (one copy of its bytes, its record count written), when `merging` and it has two posts or
    /// more; otherwise each record as the frame of its own it would have been. If libzmq cannot
    /// allocate the batch frame, the posts go one by one instead. False when a post was lost.
    private mutating func appendRun(at position: Int, merging: Bool, allocationFailed: (ZMQError) -> Void) -> Bool {
        let run = taken.run(at: position)
        if merging && run.count >= 2 {
            let size = taken.withRunBytes(at: position) { $0.count }
            do {
                var message = try Message(size: size)
                message.withUnsafeMutableBytes { out in
                    taken.withRunBytes(at: position) { out.copyMemory(from: $0) }
                    EnvelopeCodec.setBatchRecordCount(run.count, nameLength: run.nameLength, in: out)
                }
                posts.append(message)
                offsets.append(offsets[offsets.count - 1] + run.count)
                return true
            } catch {
                allocationFailed(error)
            }
        }
        var allSent = true
        for index in run.firstPost..<(run.firstPost + run.count) {
            let size = taken.withRecordBytes(at: index, inRunAt: position) { record, _ in
                EnvelopeCodec.frameBytes(ofBatchRecordCount: record.count, nameLength: run.nameLength)
            }
            do {
                var message = try Message(size: size)
                message.withUnsafeMutableBytes { out in
                    taken.withRecordBytes(at: index, inRunAt: position) { record, header in
                        EnvelopeCodec.writeFrame(ofBatchRecord: record, header: header, nameLength: run.nameLength, into: out)
                    }
                }
                posts.append(message)
                offsets.append(offsets[offsets.count - 1] + 1)
            } catch {
                allocationFailed(error)
                counters.unsent += 1
                allSent = false
            }
        }
        return allSent
    }

    /// Appends to `posts` one batch frame of the posts in `range`; if libzmq cannot allocate
    /// it, the posts go one by one instead (nothing is lost to batching). False when a post was
    /// lost even so.
    private mutating func appendBatch(
        of range: Range<Int>, nameLength: Int, size: Int, allocationFailed: (ZMQError) -> Void
    ) -> Bool {
        do {
            var message = try Message(size: size)
            let written = message.withUnsafeMutableBytes { out in
                EnvelopeCodec.writeBatch(
                    frameCount: range.count, nameLength: nameLength,
                    frame: { offset, body in taken.withPostBytes(at: range.lowerBound + offset) { body($0) } },
                    into: out)
            }
            assert(written == size, "a batch frame's size was miscounted")
            posts.append(message)
            offsets.append(offsets[offsets.count - 1] + range.count)
            return true
        } catch {
            allocationFailed(error)
            var allSent = true
            for index in range where !appendSingle(at: index, allocationFailed: allocationFailed) { allSent = false }
            return allSent
        }
    }
}
