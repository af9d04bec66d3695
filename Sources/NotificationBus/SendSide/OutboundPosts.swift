import ZeroMQ

/// The mailbox's queue of encoded posts: their frames back to back in one byte buffer that is
/// reused round after round (the mailbox and `PendingPosts` swap two of them), so a post costs
/// no allocation of its own and nothing is freed on the event loop's thread. A post is encoded
/// straight into it, under the mailbox's lock, with its sequence number: with batching on, as a
/// record of the batch frame the posts of its name just before it began (`appendRecord`), so a
/// run of one name is a whole batch frame when the loop takes it, sent with one copy of the
/// frame and no pass over its posts (a run of one post goes as the frame it would have been);
/// otherwise as its frame (`append(size:_:)`), which the loop merges with its neighbours
/// (`PendingPosts.coalesce`): a run of one name as one batch frame, a lone post as its own message.
///
/// A post as large as `ownMessageThreshold` comes as a libzmq message of its own (a large byte
/// post, a large typed one) and stays that message: an entry that refers to it
/// (`append(message:)`), its bytes never copied into the buffer, nor under the mailbox's lock. The loop sends it as it is, or copies it into a batch frame when it
/// is small enough to merge.
///
/// Non-copyable: one owner (one thread) at a time, moved between threads by `swap` under the
/// mailbox's lock, as `MessageBatch` was.
struct OutboundPosts: ~Copyable, @unchecked Sendable {
    private var bytes: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Where each post's frame ends in `bytes` (its start is the end of the one before); an
    /// entry that is a message of its own takes no bytes (its end is the one before's).
    private var ends: [Int] = []
    /// The posts that are messages of their own, in order, and their indexes among all posts
    /// (ascending). Empty on the small-post path, which then costs nothing more.
    private var messages = MessageBatch(capacity: 16)
    private var messageIndexes: [Int] = []
    /// The runs of posts written as batch records (`appendRecord`), in order: each one batch
    /// frame, its name, NUL and batch header at `start`, then one record per post. Empty when
    /// batching is off. Every other post is a frame (or a message) of its own.
    private var runs: [Run] = []
    /// Whether a record may still join the last run (the last post is its last), and its name.
    private var openName: NotificationName?

    /// Posts written as records of one batch frame (`appendRecord`).
    struct Run {
        /// The index of its first post.
        var firstPost: Int
        /// Its posts (records).
        var count: Int
        /// Where its name begins in the buffer (the first post's bytes begin with the header).
        let start: Int
        let nameLength: Int
        let publisherID: UInt64
    }

    /// A post whose frame is at least this large (16 KiB) is encoded into a libzmq message of its
    /// own and queued as it is (`append(message:)`), not into the buffer: it is never merged into
    /// a batch frame, and copying it into the buffer under the mailbox's lock and out again on
    /// the loop costs two copies (~50-100 us for 1 MB) with the lock held against other posters
    /// and the loop. Fixed, not the batch frame's size: with 32 KiB frames (the default since
    /// issue 41) that would have brought posts of 16-32 KiB back under the lock, twice copied,
    /// to merge at most one of them into a frame.
    static let ownMessageThreshold = 16 << 10

    /// A buffer holding more than this once emptied is given back (a burst of large posts does
    /// not keep its memory); below it, it is kept for the next round.
    static let retainedCapacity = 8 << 20

    init() {}

    /// Posts queued.
    var count: Int { ends.count }

    /// Whether nothing is queued.
    var isEmpty: Bool { ends.isEmpty }

    /// Posts queued: every one is unsent (the loop sends from `PendingPosts`, not from here).
    var unsentCount: Int { ends.count }

    /// The bytes all posts take.
    var byteCount: Int { ends.last ?? 0 }

    /// Queues a post of `size` bytes that `write` encodes in place (it must fill them all).
    mutating func append(size: Int, _ write: (UnsafeMutableRawBufferPointer) -> Void) {
        openName = nil
        let start = byteCount
        reserve(start + size)
        write(UnsafeMutableRawBufferPointer(start: bytes.map { $0 + start }, count: size))
        ends.append(start + size)
    }

    /// Queues a post as a batch record of `recordSize` bytes that `write` encodes in place (it
    /// must fill them all): after the last post when that is a record of the same name and
    /// publisher and the frame stays within `maximumBytes` and `WireFormat.maximumBatchRecords`,
    /// otherwise as the first record of a new batch frame (its header written here). The loop
    /// then sends each run as it is (one copy of the whole frame, no pass over its posts), a run
    /// of one post as the frame it would otherwise have been. False, nothing done, when even a
    /// new frame of this one record would pass `maximumBytes` (the caller queues a frame).
    ///
    /// `sameName`: whether `name` is the name of the post before, as far as the caller knows (the
    /// mailbox: `PostSequences` compared it as it took the sequence number, and every sequence
    /// number taken without a post queued here ends the run, `endRun`); the name is not
    /// compared again (it showed in the publisher's profile). Nil: compare it here.
    mutating func appendRecord(
        name: NotificationName, sameName: Bool? = nil, nameLength: Int, publisherID: UInt64, recordSize: Int,
        maximumBytes: Int, _ write: (UnsafeMutableRawBufferPointer) -> Void
    ) -> Bool {
        let start = byteCount
        if let openName, let last = runs.last, last.publisherID == publisherID,
            last.count < WireFormat.maximumBatchRecords, start - last.start + recordSize <= maximumBytes,
            sameName ?? (openName == name)
        {
            assert(openName == name, "a record joined the batch frame of another name")
            reserve(start + recordSize)
            write(UnsafeMutableRawBufferPointer(start: bytes.map { $0 + start }, count: recordSize))
            ends.append(start + recordSize)
            runs[runs.count - 1].count += 1
            return true
        }
        let header = EnvelopeCodec.batchHeaderBytes(nameLength: nameLength)
        guard header + recordSize <= maximumBytes, !ControlNames.isReserved(name) else {
            openName = nil
            return false
        }
        reserve(start + header + recordSize)
        EnvelopeCodec.writeBatchHeader(
            name: name, publisherID: publisherID,
            into: UnsafeMutableRawBufferPointer(start: bytes.map { $0 + start }, count: header))
        write(UnsafeMutableRawBufferPointer(start: bytes.map { $0 + start + header }, count: recordSize))
        ends.append(start + header + recordSize)
        runs.append(Run(firstPost: ends.count - 1, count: 1, start: start, nameLength: nameLength, publisherID: publisherID))
        openName = name
        return true
    }

    /// No record joins the last run any more (a sequence number was taken without a post queued).
    mutating func endRun() { openName = nil }

    /// The runs of records (`appendRecord`), in order.
    var runCount: Int { runs.count }
    func run(at position: Int) -> Run { runs[position] }

    /// Lends the bytes of the run at `position`, a whole batch frame but for its record count
    /// (`EnvelopeCodec.setBatchRecordCount`), to `body`.
    func withRunBytes<Result>(at position: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let run = runs[position]
        let end = ends[run.firstPost + run.count - 1]
        return try body(UnsafeRawBufferPointer(start: bytes.map { UnsafeRawPointer($0 + run.start) }, count: end - run.start))
    }

    /// Lends the record of the post at `index`, which is in the run at `position`, and the run's
    /// name and batch header, to `body`.
    func withRecordBytes<Result>(
        at index: Int, inRunAt position: Int,
        _ body: (_ record: UnsafeRawBufferPointer, _ header: UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        let run = runs[position]
        precondition(index >= run.firstPost && index < run.firstPost + run.count, "post not in that run")
        let headerEnd = run.start + EnvelopeCodec.batchHeaderBytes(nameLength: run.nameLength)
        let start = index == run.firstPost ? headerEnd : ends[index - 1]
        let base = bytes.map { UnsafeRawPointer($0) }
        return try body(
            UnsafeRawBufferPointer(start: base.map { $0 + start }, count: ends[index] - start),
            UnsafeRawBufferPointer(start: base.map { $0 + run.start }, count: headerEnd - run.start))
    }

    /// Queues a copy of `message`'s bytes (an encoded frame), which the caller keeps and frees
    /// on its own thread: for a small message (below `ownMessageThreshold`), whose copy costs
    /// less than keeping it alive until the loop sends it from another thread (a publisher of
    /// 256 B posts that often waited for room kept 3-4 MB more private memory that way).
    mutating func append(copying message: inout Message) {
        let size = message.count
        message.withUnsafeMutableBytes { source in
            append(size: size) { out in
                if size > 0 { out.copyMemory(from: UnsafeRawBufferPointer(source)) }
            }
        }
    }

    /// Queues `message` (an encoded, stamped frame) as it is: moved, its bytes not copied.
    mutating func append(message: consuming Message) {
        openName = nil
        messageIndexes.append(ends.count)
        ends.append(byteCount)
        messages.append(message)
    }

    /// Queues `message` as it is before every other post (a refused direct send keeps its place
    /// before what was queued meanwhile).
    mutating func prepend(message: consuming Message) {
        for index in messageIndexes.indices { messageIndexes[index] += 1 }
        for index in runs.indices { runs[index].firstPost += 1 }
        messageIndexes.insert(0, at: 0)
        ends.insert(0, at: 0)
        messages.prepend(message)
    }

    /// The position in `messages` of the post at `index` when it is a message of its own.
    @inline(__always)
    private func messagePosition(of index: Int) -> Int? {
        guard !messageIndexes.isEmpty else { return nil }
        var low = 0
        var high = messageIndexes.count
        while low < high {
            let middle = (low + high) / 2
            if messageIndexes[middle] < index { low = middle + 1 } else { high = middle }
        }
        return low < messageIndexes.count && messageIndexes[low] == index ? low : nil
    }

    /// Whether the post at `index` is a message of its own (`append(message:)`).
    func isMessage(at index: Int) -> Bool { messagePosition(of: index) != nil }

    /// Moves the post at `index`, a message of its own, to the end of `batch` (no copy); it then
    /// reads as empty here. Only before `removeAll`.
    mutating func moveMessage(at index: Int, to batch: inout MessageBatch) {
        guard let position = messagePosition(of: index) else { preconditionFailure("not a message of its own") }
        messages.moveMessage(at: position, to: &batch)
    }

    /// Lends the frame of the post at `index` to `body`; not for a post written as a record
    /// (`withRecordBytes`).
    func withPostBytes<Result>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        precondition(index >= 0 && index < ends.count, "post index out of range")
        if let position = messagePosition(of: index) { return try messages.withMessageBytes(at: position, body) }
        let start = index == 0 ? 0 : ends[index - 1]
        return try body(UnsafeRawBufferPointer(start: bytes.map { UnsafeRawPointer($0 + start) }, count: ends[index] - start))
    }

    /// Empties the queue, keeping the buffer unless it grew past `retainedCapacity`; messages of
    /// their own still here are freed.
    mutating func removeAll() {
        ends.removeAll(keepingCapacity: ends.capacity <= 65_536)
        if !runs.isEmpty { runs.removeAll(keepingCapacity: runs.capacity <= 4_096) }
        openName = nil
        if !messageIndexes.isEmpty {
            messageIndexes.removeAll(keepingCapacity: true)
            messages.removeAll()
        }
        if capacity > Self.retainedCapacity {
            bytes?.deallocate()
            bytes = nil
            capacity = 0
        }
    }

    private mutating func reserve(_ needed: Int) {
        guard needed > capacity || bytes == nil else { return }
        let newCapacity = max(needed, capacity * 2, 4096)
        let newBytes = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let bytes {
            if byteCount > 0 { newBytes.copyMemory(from: bytes, byteCount: byteCount) }
            bytes.deallocate()
        }
        bytes = newBytes
        capacity = newCapacity
    }

    deinit {
        bytes?.deallocate()
    }
}
