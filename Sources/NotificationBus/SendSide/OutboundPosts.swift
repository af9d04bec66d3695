import ZeroMQ

/// The mailbox's queue of encoded posts: their frames back to back in one byte buffer that is
/// reused round after round (the mailbox and `PendingPosts` swap two of them), so a post costs
/// no allocation of its own and nothing is freed on the event loop's thread. A post is encoded
/// straight into it (`append(size:_:)`), under the mailbox's lock, with its sequence number;
/// the loop then builds the frames ZeroMQ sends from it (`PendingPosts.coalesce`): a run of one
/// name as one batch frame, its bytes copied once, a lone post as its own message.
///
/// Non-copyable: one owner (one thread) at a time, moved between threads by `swap` under the
/// mailbox's lock, as `MessageBatch` was.
struct OutboundPosts: ~Copyable, @unchecked Sendable {
    private var bytes: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Where each post's frame ends in `bytes` (its start is the end of the one before).
    private var ends: [Int] = []

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
    /// on its own thread.
    mutating func append(copying message: inout Message) {
        let size = message.count
        message.withUnsafeMutableBytes { source in
            append(size: size) { out in
                if size > 0 { out.copyMemory(from: UnsafeRawBufferPointer(source)) }
            }
        }
    }

    /// Queues a copy of `message`'s bytes before every other post (a refused direct send keeps
    /// its place before what was queued meanwhile).
    mutating func prepend(copying message: inout Message) {
        let size = message.count
        let total = byteCount
        reserve(total + size)
        if let bytes {
            if total > 0 { (bytes + size).copyMemory(from: bytes, byteCount: total) }
            message.withUnsafeMutableBytes { source in
                if size > 0, let from = source.baseAddress { bytes.copyMemory(from: from, byteCount: size) }
            }
        }
        for index in ends.indices { ends[index] += size }
        ends.insert(size, at: 0)
    }

    /// Lends the frame of the post at `index` to `body`.
    func withPostBytes<Result>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        precondition(index >= 0 && index < ends.count, "post index out of range")
        let start = index == 0 ? 0 : ends[index - 1]
        return try body(UnsafeRawBufferPointer(start: bytes.map { UnsafeRawPointer($0 + start) }, count: ends[index] - start))
    }

    /// Lends the frame of the post queued last, writable (to stamp it), to `body`.
    mutating func withLastPostBytes<Result>(_ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result? {
        guard let end = ends.last else { return nil }
        let start = ends.count >= 2 ? ends[ends.count - 2] : 0
        return body(UnsafeMutableRawBufferPointer(start: bytes.map { $0 + start }, count: end - start))
    }

    /// Empties the queue, keeping the buffer unless it grew past `retainedCapacity`.
    mutating func removeAll() {
        ends.removeAll(keepingCapacity: ends.capacity <= 65_536)
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
