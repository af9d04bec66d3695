import CZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// Runs one libzmq call and maps failure to a typed `ZMQError`.
///
/// Every C call in this module goes through here: a `-1` result (or `nil`
/// pointer, see `zmqPointerCall`) reads `zmq_errno()`, retries `EINTR`, and
/// throws anything else, so no caller has to remember the errno dance.
@inline(__always)
@usableFromInline
internal func zmqCall(_ operation: StaticString, _ body: () -> Int32) throws(ZMQError) -> Int32 {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = zmq_errno()
        if code == czmq_eintr() { continue }
        throw ZMQError(code: code, operation: operation.description)
    }
}

/// Like `zmqCall`, for the few libzmq calls that return a pointer and signal failure with `NULL`.
@inline(__always)
@usableFromInline
internal func zmqPointerCall(
    _ operation: StaticString, _ body: () -> UnsafeMutableRawPointer?
) throws(ZMQError) -> UnsafeMutableRawPointer {
    while true {
        if let pointer = body() { return pointer }
        let code = zmq_errno()
        if code == czmq_eintr() { continue }
        throw ZMQError(code: code, operation: operation.description)
    }
}

/// Like `zmqCall`, for plain system calls (`read`, `open`, `fstat`...): `-1` reads the C `errno`,
/// retries `EINTR`, and throws anything else as a `ZMQError` carrying that `errno`.
@inline(__always)
@usableFromInline
internal func systemCall(_ operation: StaticString, _ body: () -> Int32) throws(ZMQError) -> Int32 {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = czmq_errno()
        if code == czmq_eintr() { continue }
        throw ZMQError(code: code, operation: operation.description)
    }
}

/// Hints the processor to bring `count` bytes from `start` into its cache, for reading soon: for a
/// walk whose every step would otherwise wait for the memory of the next (a batch frame's records).
/// Inlined: one call per record on the receiving hot path.
@inlinable @inline(__always)
package func prefetchForReading(_ start: UnsafeRawPointer, count: Int) {
    czmq_prefetch(start, count)
}

/// Whether the peer of a connected socket descriptor (one libzmq holds, from the socket monitor)
/// has closed its end, or the descriptor is no longer open: a look at its state with a poll that
/// does not wait, never a read.
package func peerHasHungUp(descriptor: Int32) -> Bool {
    czmq_peer_hung_up(descriptor) == 1
}

/// Gives memory the process freed back to the system (glibc's `malloc_trim`): after a burst or a
/// flood of connections, glibc keeps the freed heap for reuse and the resident size stays high.
/// Takes a few milliseconds with a large heap; call it when idle.
///
/// `package`: tuning the process's heap is the program's decision (the broker's memory guard, nbus),
/// not part of a socket library's API.
package func releaseFreeMemory() {
    _ = czmq_malloc_trim()
}

/// Lets glibc keep up to `bytes` of freed heap for reuse before it gives the heap's top back to
/// the system (`M_TRIM_THRESHOLD`; glibc's default is 128 KiB, and it then grows and shrinks the
/// heap with every burst, a page fault per page each time). For a process's start, before
/// threads allocate. Returns whether glibc took it.
///
/// `package`, as `releaseFreeMemory`: the program's decision, not the socket library's API.
@discardableResult
package func keepFreeHeap(upTo bytes: Int32) -> Bool {
    czmq_keep_free_heap(bytes) == 1
}

/// Names the calling thread for `top -H`, `ps -L` and `perf` (Linux keeps the first 15 bytes).
/// Here rather than in the bus because `prctl` is variadic and only this module sees the C shim.
/// Returns whether the kernel took it.
@discardableResult
package func setCurrentThreadName(_ name: String) -> Bool {
    czmq_set_current_thread_name(name) == 0
}

/// A connection's file descriptor as libzmq's monitor reported it (`ZMQ_EVENT_ACCEPTED`), for the
/// two things libzmq itself cannot do with one chosen connection: tell how far behind its peer
/// is, and end it.
///
/// libzmq owns the descriptor and may close it (and the kernel reuse its number) at any moment:
/// a caller names one it saw accepted and not yet disconnected, and checks what it reads before
/// acting on it.
public struct ConnectionDescriptor: Hashable, Sendable {
    /// The descriptor's number.
    public var rawValue: Int32

    /// A descriptor from a monitor event.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// Bytes written to the connection that its peer has not taken yet (TCP: unsent and
    /// unacknowledged; unix socket: unread), or nil when it is not an open stream socket. A peer
    /// that reads nothing keeps this constant (its window, or the socket's buffer, is full).
    public func unsentBytes() -> Int? {
        let bytes = czmq_unsent_bytes(rawValue)
        return bytes < 0 ? nil : Int(bytes)
    }

    /// The kernel's send buffer size of the connection (`SO_SNDBUF`: over TCP it grows with the
    /// connection), or nil when it cannot be read.
    public func sendBufferSize() -> Int? {
        var size: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(rawValue, SOL_SOCKET, SO_SNDBUF, &size, &length) == 0 else { return nil }
        return Int(size)
    }

    /// Over TCP, the bytes the peer has acknowledged since the connection began: a counter that
    /// grows whenever the peer's application reads (its window opens) and stands still while it
    /// reads nothing. nil for other sockets (ipc) and kernels before Linux 4.1.
    public func bytesAcknowledged() -> UInt64? {
        var bytes: UInt64 = 0
        return czmq_tcp_bytes_acked(rawValue, &bytes) == 0 ? bytes : nil
    }

    /// Ends the connection in both directions without closing the descriptor (libzmq's I/O thread
    /// sees the end, closes it and drops its pipe, as if the peer had gone). Returns whether the
    /// kernel accepted it.
    @discardableResult
    public func shutDown() -> Bool {
        shutdown(rawValue, Int32(SHUT_RDWR)) == 0
    }
}
