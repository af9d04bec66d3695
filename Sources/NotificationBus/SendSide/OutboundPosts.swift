import ZeroMQ

/// The mailbox's queue of encoded posts: their frames back to back in one byte buffer that is
/// reused round after round (the mailbox and `PendingPosts` swap two of them), so a post costs
/// no allocation of its own and nothing is freed on the event loop's thread. A post is encoded
/// straight into it (`append(size:_:)`), under the mailbox's lock, with its sequence number;
/// the loop then builds the frames ZeroMQ sends from it (`PendingPosts.coalesce`): a run of one
/// name as one batch frame, its bytes copied once, a lone post as its own message.
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

    /// A post whose frame is at least this large is encoded into a libzmq message of its own
    /// and queued as it is (`append(message:)`), not into the buffer: it is never merged into a
    /// batch frame (it is as large as one, `batchBytes`), and copying it into the buffer under
    /// the mailbox's lock and out again on the loop costs two copies (~50-100 us for 1 MB) with
    /// the lock held against other posters and the loop. Never below 16 KiB (batching off).
    static func ownMessageThreshold(batchBytes: Int) -> Int { max(batchBytes, 16 << 10) }

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
        let start = byteCount
        reserve(start + size)
        write(UnsafeMutableRawBufferPointer(start: bytes.map { $0 + start }, count: size))
        ends.append(start + size)
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
        messageIndexes.append(ends.count)
        ends.append(byteCount)
        messages.append(message)
    }

    /// Queues `message` as it is before every other post (a refused direct send keeps its place
    /// before what was queued meanwhile).
    mutating func prepend(message: consuming Message) {
        for index in messageIndexes.indices { messageIndexes[index] += 1 }
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

    /// Lends the frame of the post at `index` to `body`.
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
