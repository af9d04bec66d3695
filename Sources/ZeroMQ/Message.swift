import CZeroMQ

/// One frame built before it reaches its socket: libzmq's own `zmq_msg_t`, filled in place.
///
/// Any thread may build one (a `zmq_msg_t` is plain memory until it is sent); the thread that
/// owns the socket sends it without copying the bytes again. Non-copyable: it is sent, or
/// closed when it goes, exactly once.
public struct Message: ~Copyable, Sendable {
    @usableFromInline var raw = zmq_msg_t()

    /// A message of `size` bytes, uninitialised; fill it through `withUnsafeMutableBytes`.
    /// Throws only when libzmq cannot allocate (`ENOMEM`).
    @inlinable
    public init(size: Int) throws(ZMQError) {
        _ = try zmqCall("zmq_msg_init_size") { zmq_msg_init_size(&raw, size) }
    }

    /// The message's bytes, writable; valid only inside `body`.
    @inlinable
    public mutating func withUnsafeMutableBytes<Result>(
        _ body: (UnsafeMutableRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        let size = zmq_msg_size(&raw)
        return try body(UnsafeMutableRawBufferPointer(start: zmq_msg_data(&raw), count: size))
    }

    /// The size in bytes.
    @inlinable
    public var count: Int {
        mutating get { zmq_msg_size(&raw) }
    }

    /// Gives up ownership of the underlying `zmq_msg_t` without closing it (a bitwise move,
    /// as libzmq's `zmq_msg_move` does); the caller must send or close it.
    @usableFromInline
    consuming func takeRaw() -> zmq_msg_t {
        let moved = raw
        discard self
        return moved
    }

    deinit {
        var closing = raw
        zmq_msg_close(&closing)
    }
}

/// A growable run of `Message`s queued for one socket, sent in order by `Socket.send(_:)`.
///
/// Non-copyable like its messages; swapping two batches (`swap(&a, &b)`) moves a whole queue
/// between threads in O(1), which is how a bus hands posts to its I/O thread.
///
/// `@unchecked Sendable`: the batch is non-copyable, so exactly one owner (one thread) holds its
/// storage at a time, and moving `zmq_msg_t`s between threads is allowed by libzmq (only a
/// socket is tied to a thread). The compiler cannot see through the unsafe pointer.
public struct MessageBatch: ~Copyable, @unchecked Sendable {
    @usableFromInline var storage: UnsafeMutablePointer<zmq_msg_t>
    @usableFromInline var capacity: Int
    /// Messages queued (sent ones included until `removeAll`).
    public internal(set) var count = 0
    /// Index of the first message not yet accepted by a socket.
    public fileprivate(set) var sentCount = 0

    /// An empty batch with room for `capacity` messages before it grows.
    public init(capacity: Int = 64) {
        self.capacity = max(1, capacity)
        storage = .allocate(capacity: self.capacity)
    }

    /// Messages queued and not yet sent.
    public var unsentCount: Int { count - sentCount }

    /// Whether nothing is queued.
    public var isEmpty: Bool { count == 0 }

    /// Queues `message` at the end (moving it: no copy of its bytes).
    public mutating func append(_ message: consuming Message) {
        if count == capacity { grow() }
        (storage + count).initialize(to: message.takeRaw())
        count += 1
    }

    /// Queues `message` before every unsent one (moving it): a message that was to go first and
    /// could not (a refused direct send) keeps its place. Only before anything was sent.
    public mutating func prepend(_ message: consuming Message) {
        precondition(sentCount == 0, "prepend after a send would reorder sent messages")
        if count == capacity { grow() }
        (storage + 1).moveInitialize(from: storage, count: count)
        storage.initialize(to: message.takeRaw())
        count += 1
    }

    /// Writes into the last queued message's bytes (e.g. to stamp a sequence number).
    public mutating func withLastMessageBytes<Result>(_ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result? {
        guard count > sentCount else { return nil }
        let message = storage + (count - 1)
        return body(UnsafeMutableRawBufferPointer(start: zmq_msg_data(message), count: zmq_msg_size(message)))
    }

    /// Lends the bytes of the message at `index` (sent or not) to `body`.
    public func withMessageBytes<Result>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        precondition(index >= 0 && index < count, "message index out of range")
        let message = storage + index
        return try body(UnsafeRawBufferPointer(start: zmq_msg_data(message), count: zmq_msg_size(message)))
    }

    /// The descriptor of the connection the received message at `index` came in on (libzmq's
    /// `ZMQ_SRCFD`, kept in the connection's metadata), or nil when it has none: a message that
    /// came over inproc, or one built here. Unique among a socket's open connections only: libzmq
    /// gives a closed connection's descriptor to the next one.
    public func sourceDescriptor(at index: Int) -> Int32? {
        precondition(index >= 0 && index < count, "message index out of range")
        let descriptor = zmq_msg_get(storage + index, ZMQ_SRCFD)
        return descriptor >= 0 ? descriptor : nil
    }

    /// A metadata property of the received message at `index` (`zmq_msg_gets`: `User-Id`, the
    /// identity a ZAP handler gave the connection; `Peer-Address`; `Socket-Type`), or nil.
    public func property(_ name: String, at index: Int) -> String? {
        precondition(index >= 0 && index < count, "message index out of range")
        guard let value = zmq_msg_gets(storage + index, name) else { return nil }
        return String(cString: value)
    }

    /// Moves the message at `index` (not yet sent) to the end of `other` without copying its
    /// bytes; its slot here is left an empty message, which sending skips nothing and closing
    /// frees nothing, so only use it on a batch that is then emptied (`removeAll`).
    public mutating func moveMessage(at index: Int, to other: inout MessageBatch) {
        precondition(index >= sentCount && index < count, "message index out of range")
        if other.count == other.capacity { other.grow() }
        (other.storage + other.count).moveInitialize(from: storage + index, count: 1)
        zmq_msg_init(storage + index)
        other.count += 1
    }

    /// Closes what was never sent and empties the batch; returns how many were never sent.
    @discardableResult
    public mutating func removeAll() -> Int {
        let unsent = count - sentCount
        for index in 0..<count { zmq_msg_close(storage + index) }
        count = 0
        sentCount = 0
        return unsent
    }

    /// Counts the messages before `index` as sent without sending them (nor closing them:
    /// `removeAll` does): for a batch whose messages went out as copies (`Socket.sendCopies`).
    public mutating func markSent(upTo index: Int) {
        precondition(index >= sentCount && index <= count, "message index out of range")
        sentCount = index
    }

    /// Marks the next unsent message as given up (counted by the caller) without sending it.
    public mutating func skipNext() {
        guard sentCount < count else { return }
        zmq_msg_close(storage + sentCount)
        zmq_msg_init(storage + sentCount)
        sentCount += 1
    }

    mutating func grow() {
        let newCapacity = capacity * 2
        let newStorage = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: newCapacity)
        newStorage.moveInitialize(from: storage, count: count)
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }

    deinit {
        for index in 0..<count { zmq_msg_close(storage + index) }
        storage.deallocate()
    }
}

extension Socket {
    /// Sends the batch's unsent messages in order until one is refused: returns how many went.
    ///
    /// A refusal (`wouldBlock` in `.dontWait` mode or after `.sendTimeout`) leaves that message
    /// queued for the next call; any other error is thrown with the message still queued, so the
    /// caller decides (`skipNext()` to give it up).
    /// `limit` stops before the message at that index.
    public func send(_ batch: inout MessageBatch, mode: BlockingMode = .dontWait, limit: Int = .max) throws(ZMQError) -> Int {
        let flags: Int32 = mode == .dontWait ? ZMQ_DONTWAIT : 0
        let start = batch.sentCount
        let end = min(batch.count, limit)
        while batch.sentCount < end {
            let message = batch.storage + batch.sentCount
            let result = zmq_msg_send(message, handle, flags)
            if result == -1 {
                let code = zmq_errno()
                if code == czmq_eintr() { continue }
                let error = ZMQError(code: code, operation: "zmq_msg_send")
                if error.kind == .wouldBlock { break }
                throw error
            }
            batch.sentCount += 1
        }
        return batch.sentCount - start
    }

    /// Sends copies of the batch's messages from `start` in order until one is refused: returns
    /// how many went. The batch keeps its messages (one batch goes to several sockets this way):
    /// `zmq_msg_copy` shares a message's bytes by reference count, so a copy costs no copy of
    /// the bytes beyond ZeroMQ's smallest messages. A refusal (`wouldBlock`) stops the sending;
    /// any other error is thrown, the messages before it sent.
    public func sendCopies(of batch: borrowing MessageBatch, from start: Int, mode: BlockingMode = .dontWait) throws(ZMQError) -> Int {
        let flags: Int32 = mode == .dontWait ? ZMQ_DONTWAIT : 0
        var index = start
        var copy = zmq_msg_t()
        while index < batch.count {
            zmq_msg_init(&copy)
            if zmq_msg_copy(&copy, batch.storage + index) == -1 {
                let error = ZMQError(code: zmq_errno(), operation: "zmq_msg_copy")
                zmq_msg_close(&copy)
                throw error
            }
            var result = zmq_msg_send(&copy, handle, flags)
            while result == -1 && zmq_errno() == czmq_eintr() { result = zmq_msg_send(&copy, handle, flags) }
            if result == -1 {
                let error = ZMQError(code: zmq_errno(), operation: "zmq_msg_send")
                zmq_msg_close(&copy)
                if error.kind == .wouldBlock { break }
                throw error
            }
            index += 1
        }
        return index - start
    }

    /// Sends `message` if the socket takes it now, without copying its bytes: true when sent (the
    /// message is left empty), false when it would block (the message is left intact, to queue
    /// or retry). Other failures throw, the message intact.
    public func sendIfReady(_ message: inout Message) throws(ZMQError) -> Bool {
        while zmq_msg_send(&message.raw, handle, ZMQ_DONTWAIT) == -1 {
            let code = zmq_errno()
            if code == czmq_eintr() { continue }
            let error = ZMQError(code: code, operation: "zmq_msg_send")
            if error.kind == .wouldBlock { return false }
            throw error
        }
        return true
    }

    /// Sends one message without copying its bytes; on failure the message is closed.
    public func send(_ message: consuming Message, mode: BlockingMode = .blocking) throws(ZMQError) {
        let flags: Int32 = mode == .dontWait ? ZMQ_DONTWAIT : 0
        var raw = message.takeRaw()
        defer { zmq_msg_close(&raw) }  // empty after a successful send: closing it is a no-op
        _ = try zmqCall("zmq_msg_send") { zmq_msg_send(&raw, handle, flags) }
    }
}

extension Socket {
    /// Receives one part into the end of `batch` without copying its bytes (a forwarder's read).
    ///
    /// Returns whether more parts of the same message follow, or nil when nothing is waiting
    /// (`wouldBlock` in `.dontWait` mode); any other error is thrown and nothing is appended.
    public func receivePart(appendingTo batch: inout MessageBatch, mode: BlockingMode = .dontWait) throws(ZMQError) -> (
        more: Bool, size: Int
    )? {
        let flags: Int32 = mode == .dontWait ? ZMQ_DONTWAIT : 0
        var raw = zmq_msg_t()
        zmq_msg_init(&raw)
        while zmq_msg_recv(&raw, handle, flags) == -1 {
            let code = zmq_errno()
            if code == czmq_eintr() { continue }
            zmq_msg_close(&raw)
            let error = ZMQError(code: code, operation: "zmq_msg_recv")
            if error.kind == .wouldBlock { return nil }
            throw error
        }
        let more = zmq_msg_more(&raw) != 0
        let size = zmq_msg_size(&raw)
        if batch.count == batch.capacity { batch.grow() }
        (batch.storage + batch.count).initialize(to: raw)
        batch.count += 1
        return (more, size)
    }

    /// Sends the batch's unsent messages as the parts of one message (every part but the last
    /// flagged MORE), in order, without copying. Returns true once the last part went; false
    /// when the socket refused a part (`wouldBlock`), which stays queued for the next call.
    ///
    /// ZeroMQ refuses a message, if at all, at its first part (a peer's room is counted in whole
    /// messages), so a refusal leaves the message unsent, never half-sent.
    public func sendParts(_ batch: inout MessageBatch, mode: BlockingMode = .dontWait) throws(ZMQError) -> Bool {
        let dontWait: Int32 = mode == .dontWait ? ZMQ_DONTWAIT : 0
        while batch.sentCount < batch.count {
            let more: Int32 = batch.sentCount < batch.count - 1 ? ZMQ_SNDMORE : 0
            if zmq_msg_send(batch.storage + batch.sentCount, handle, dontWait | more) == -1 {
                let code = zmq_errno()
                if code == czmq_eintr() { continue }
                let error = ZMQError(code: code, operation: "zmq_msg_send")
                if error.kind == .wouldBlock { return false }
                throw error
            }
            batch.sentCount += 1
        }
        return true
    }
}
