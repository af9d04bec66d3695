import CZeroMQ

/// How a send or receive behaves when it cannot complete at once.
public enum BlockingMode: Sendable {
    /// Wait (up to `.sendTimeout`/`.receiveTimeout`, if set).
    case blocking
    /// `ZMQ_DONTWAIT`: fail at once with `ZMQError.Kind.wouldBlock`.
    case dontWait
}

/// A ZeroMQ socket. Not thread-safe, exactly like libzmq's: one thread (or one task
/// that never shares it) owns it from creation to `close()`; it is deliberately not `Sendable`.
///
/// Closing is explicit (`close()`) or happens on deinit. The socket keeps its `Context` alive.
public final class Socket {
    /// The context this socket was made from.
    public let context: Context
    /// The socket pattern.
    public let type: SocketType
    @usableFromInline let handle: UnsafeMutableRawPointer
    private var isClosed = false
    /// The socket files of this socket's `ipc://` binds, removed when it closes or unbinds.
    private var boundFiles: [String: IPCEndpoint.SocketFile] = [:]

    init(context: Context, type: SocketType) throws(ZMQError) {
        self.context = context
        self.type = type
        self.handle = try zmqPointerCall("zmq_socket") { zmq_socket(context.handle, type.rawValue) }
    }

    deinit {
        if !isClosed { close() }
    }

    /// Closes the socket now; later calls on it fail with `ENOTSOCK`. Closing twice is harmless.
    /// The files of its `ipc://` binds are removed (libzmq 4.3 would leave them behind).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        zmq_close(handle)
        for file in boundFiles.values { file.removeIfUnchanged() }
        boundFiles.removeAll()
    }

    // MARK: Endpoints

    /// Binds to `endpoint` (`inproc://x`, `ipc:///tmp/x.sock`, `tcp://127.0.0.1:*`).
    ///
    /// An `ipc://` path that another socket is listening on is `addressInUse`, as for tcp (libzmq
    /// itself would silently take the path over and strand the other listener).
    public func bind(_ endpoint: String) throws(ZMQError) {
        try checkOpen("zmq_bind")
        try TCPEndpoint.check(endpoint, operation: "zmq_bind")
        if let path = IPCEndpoint.path(of: endpoint), IPCEndpoint.hasListener(atPath: path) {
            throw ZMQError(code: czmq_eaddrinuse(), operation: "zmq_bind", endpoint: endpoint)
        }
        do {
            _ = try zmqCall("zmq_bind") { zmq_bind(handle, endpoint) }
        } catch {
            throw error.on(endpoint: endpoint)
        }
        if let path = IPCEndpoint.path(of: endpoint), let file = IPCEndpoint.SocketFile(atPath: path) {
            boundFiles[endpoint] = file
        }
    }

    /// Connects to `endpoint`; libzmq connects (and reconnects) in the background.
    public func connect(_ endpoint: String) throws(ZMQError) {
        try checkOpen("zmq_connect")
        try TCPEndpoint.check(endpoint, operation: "zmq_connect")
        do {
            _ = try zmqCall("zmq_connect") { zmq_connect(handle, endpoint) }
        } catch {
            throw error.on(endpoint: endpoint)
        }
    }

    /// Stops listening on a bound `endpoint` (use the resolved one from `lastEndpoint` for wildcards).
    public func unbind(_ endpoint: String) throws(ZMQError) {
        try checkOpen("zmq_unbind")
        do {
            _ = try zmqCall("zmq_unbind") { zmq_unbind(handle, endpoint) }
        } catch {
            throw error.on(endpoint: endpoint)
        }
        boundFiles.removeValue(forKey: endpoint)?.removeIfUnchanged()
    }

    /// Disconnects from a connected `endpoint`.
    public func disconnect(_ endpoint: String) throws(ZMQError) {
        try checkOpen("zmq_disconnect")
        do {
            _ = try zmqCall("zmq_disconnect") { zmq_disconnect(handle, endpoint) }
        } catch {
            throw error.on(endpoint: endpoint)
        }
    }

    /// The endpoint last bound, with the port libzmq chose for `tcp://127.0.0.1:*`.
    public func lastEndpoint() throws(ZMQError) -> String {
        try get(.lastEndpoint)
    }

    // MARK: Options

    /// Sets a typed option.
    public func set<Value>(_ option: SocketOption<Value>, _ value: Value) throws(ZMQError) {
        try checkOpen("zmq_setsockopt")
        try value.setOption(option.rawValue, on: handle)
    }

    /// Reads a typed option.
    public func get<Value>(_ option: SocketOption<Value>) throws(ZMQError) -> Value {
        try checkOpen("zmq_getsockopt")
        return try Value.getOption(option.rawValue, on: handle)
    }

    /// Adds a SUB prefix filter (empty = everything).
    public func subscribe(_ prefix: [UInt8]) throws(ZMQError) { try set(.subscribe, prefix) }

    /// Removes one SUB prefix filter added by `subscribe`.
    public func unsubscribe(_ prefix: [UInt8]) throws(ZMQError) { try set(.unsubscribe, prefix) }

    /// Whether the last frame received has more parts after it.
    ///
    /// `ZMQ_RCVMORE` fails only on a closed socket or a terminated context (`ENOTSOCK`,
    /// `ETERM`), where no further part can be read either: false then is the true answer, and
    /// the next receive reports the error itself.
    public var hasMoreParts: Bool { (try? get(.receiveMore)) ?? false }

    // MARK: Sending

    /// Sends one frame from raw bytes; `more` marks it as not the last part of a multipart message.
    ///
    /// Throws `.wouldBlock` in `.dontWait` mode (or after `.sendTimeout`) when the socket cannot take it.
    @inlinable
    public func send(_ bytes: UnsafeRawBufferPointer, more: Bool = false, mode: BlockingMode = .blocking)
        throws(ZMQError)
    {
        var flags: Int32 = 0
        if more { flags |= ZMQ_SNDMORE }
        if case .dontWait = mode { flags |= ZMQ_DONTWAIT }
        _ = try zmqCall("zmq_send") { zmq_send(handle, bytes.baseAddress, bytes.count, flags) }
    }

    /// Sends one frame of `bytes`.
    @inlinable
    public func send(_ bytes: [UInt8], more: Bool = false, mode: BlockingMode = .blocking) throws(ZMQError) {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ZMQError) in try send(buffer, more: more, mode: mode) }
        }
        try result.get()
    }

    /// Sends one frame holding `text` as UTF-8.
    public func send(_ text: String, more: Bool = false, mode: BlockingMode = .blocking) throws(ZMQError) {
        try send(Array(text.utf8), more: more, mode: mode)
    }

    /// Sends all `parts` as one multipart message (atomically: all or none reach a peer).
    ///
    /// An empty array is rejected with `EINVAL`: ZeroMQ has no zero-part message.
    public func send(multipart parts: [[UInt8]], mode: BlockingMode = .blocking) throws(ZMQError) {
        guard !parts.isEmpty else { throw ZMQError(code: czmq_einval(), operation: "zmq_send") }
        for (index, part) in parts.enumerated() {
            try send(part, more: index < parts.count - 1, mode: mode)
        }
    }

    // MARK: Receiving

    /// Receives one frame and lends its bytes to `body` without copying; `more` tells whether parts follow.
    ///
    /// The buffer is valid only inside `body`. Throws `.wouldBlock` in `.dontWait` mode when nothing waits.
    @inlinable
    public func receive<Result>(
        mode: BlockingMode = .blocking,
        _ body: (_ bytes: UnsafeRawBufferPointer, _ more: Bool) throws -> Result
    ) throws -> Result {
        try withUnsafeTemporaryAllocation(of: zmq_msg_t.self, capacity: 1) { storage in
            let message = storage.baseAddress.unsafelyUnwrapped
            zmq_msg_init(message)
            defer { zmq_msg_close(message) }
            let flags: Int32 = mode == .dontWait ? ZMQ_DONTWAIT : 0
            _ = try zmqCall("zmq_msg_recv") { zmq_msg_recv(message, handle, flags) }
            let bytes = UnsafeRawBufferPointer(start: zmq_msg_data(message), count: zmq_msg_size(message))
            return try body(bytes, zmq_msg_more(message) != 0)
        }
    }

    /// Receives one frame, copied once into a Swift array of exactly its size (no truncation).
    public func receive(mode: BlockingMode = .blocking) throws(ZMQError) -> [UInt8] {
        do {
            return try receive(mode: mode) { bytes, _ in Array(bytes) }
        } catch let error as ZMQError {
            throw error
        } catch {
            fatalError("unreachable: the body does not throw")
        }
    }

    /// Receives every part of one multipart message (one part for a single-frame message).
    public func receiveMultipart(mode: BlockingMode = .blocking) throws(ZMQError) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var more = true
        var partMode = mode
        while more {
            do {
                try receive(mode: partMode) { bytes, hasMore in
                    parts.append(Array(bytes))
                    more = hasMore
                }
            } catch let error as ZMQError {
                throw error
            } catch {
                fatalError("unreachable: the body does not throw")
            }
            // Later parts of a message are already here: libzmq delivers messages atomically.
            partMode = .blocking
        }
        return parts
    }

    /// Receives one frame if one is waiting: nil when none is (would-block is a value here, not
    /// an error); any other failure (a terminated context, a closed socket) is thrown.
    public func receiveIfReady() throws(ZMQError) -> [UInt8]? {
        var frame: [UInt8]?
        guard try receiveIfReady({ bytes, _ in frame = Array(bytes) }) != nil else { return nil }
        return frame
    }

    /// Receives one frame if one is waiting and lends its bytes to `body` (valid only inside it);
    /// returns whether parts follow, nil when nothing waits. Would-block makes no error at all:
    /// an event loop ends every read that way, and `receive(mode: .dontWait)` boxed one each time
    /// (an allocation, its text and a dynamic cast in the loop's profile). Other failures throw.
    package func receiveIfReady(_ body: (_ bytes: UnsafeRawBufferPointer, _ more: Bool) -> Void) throws(ZMQError) -> Bool? {
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        while zmq_msg_recv(&message, handle, ZMQ_DONTWAIT) == -1 {
            let code = zmq_errno()
            if code == czmq_eintr() { continue }
            let error = ZMQError(code: code, operation: "zmq_msg_recv")
            if error.kind == .wouldBlock { return nil }
            throw error
        }
        let more = zmq_msg_more(&message) != 0
        body(UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: zmq_msg_size(&message)), more)
        return more
    }

    /// Receives every part of one message if one is waiting: nil when none is; other failures throw.
    public func receiveMultipartIfReady() throws(ZMQError) -> [[UInt8]]? {
        var first: [UInt8] = []
        // Nothing waits: nil, with no error made (a loop's monitors are read until then).
        guard let more = try receiveIfReady({ bytes, _ in first = Array(bytes) }) else { return nil }
        guard more else { return [first] }
        // Later parts of a message are already here: libzmq delivers messages atomically.
        return [first] + (try receiveMultipart(mode: .blocking))
    }

    /// Sends one frame if the socket takes it now: false when it would block (the peer's queue
    /// is full); other failures throw.
    public func sendIfReady(_ bytes: [UInt8]) throws(ZMQError) -> Bool {
        do {
            try send(bytes, mode: .dontWait)
            return true
        } catch where error.kind == .wouldBlock {
            return false
        }
    }

    /// Receives one frame as UTF-8 text (invalid sequences become U+FFFD).
    public func receiveString(mode: BlockingMode = .blocking) throws(ZMQError) -> String {
        String(decoding: try receive(mode: mode), as: UTF8.self)
    }

    // MARK: Private

    func checkOpen(_ operation: StaticString) throws(ZMQError) {
        if isClosed { throw ZMQError(code: czmq_enotsock(), operation: operation.description) }
    }
}
