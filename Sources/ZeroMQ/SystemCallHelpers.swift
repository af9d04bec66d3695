import CZeroMQ

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

/// Gives memory the process freed back to the system (glibc's `malloc_trim`): after a burst or a
/// flood of connections, glibc keeps the freed heap for reuse and the resident size stays high.
/// Takes a few milliseconds with a large heap; call it when idle.
public func releaseFreeMemory() {
    _ = czmq_malloc_trim()
}
