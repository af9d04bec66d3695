import CZeroMQ
import Synchronization

/// A ZeroMQ context: the thread-safe owner of libzmq's I/O threads and of every socket made from it.
///
/// Sockets keep their context alive. `shutdown()` makes every blocking call on
/// its sockets return `ETERM` (`ZMQError.Kind.contextTerminated`); `terminate()`
/// then waits for the sockets to close. A new context sets `ZMQ_BLOCKY` off, so
/// sockets default to linger 0 and terminating never hangs on unsent messages;
/// set `.linger` on a socket that must flush on close.
public final class Context: Sendable {
    /// The `void *` from `zmq_ctx_new`. `nonisolated(unsafe)` is sound here because
    /// a libzmq context is documented thread-safe and the pointer itself never changes.
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer
    private let state = Mutex<State>(.running)

    private enum State { case running, shutDown, terminated }

    /// Creates a context with `ioThreads` libzmq I/O threads. With `blocky` false (the default)
    /// `terminate()` discards unsent messages at once; with true it waits out each socket's `.linger`.
    ///
    /// `zeroCopyReceive` false gives every received message an allocation of its own. By default
    /// libzmq decodes messages in place inside a shared 8 KiB read buffer, which lives as long as
    /// any message in it: cheap for messages consumed at once, but a process that *keeps* messages
    /// (a broker queueing for a stopped subscriber) then holds a whole buffer for every read
    /// (measured: a 300-byte frame cost 2.2 KB, a 4 KiB one 12 KB; see
    /// docs/benchmarks/latency-and-broker.md).
    public init(ioThreads: Int32 = 1, blocky: Bool = false, zeroCopyReceive: Bool = true) throws(ZMQError) {
        handle = try zmqPointerCall("zmq_ctx_new") { zmq_ctx_new() }
        _ = try zmqCall("zmq_ctx_set") { zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads) }
        _ = try zmqCall("zmq_ctx_set") { zmq_ctx_set(handle, ZMQ_BLOCKY, blocky ? 1 : 0) }
        if !zeroCopyReceive {
            // ZMQ_ZERO_COPY_RECV (10): zmq.h lists it among the draft options, but libzmq 4.3
            // handles it in every build (zmq_ctx_set refuses an option it does not know).
            _ = try zmqCall("zmq_ctx_set") { zmq_ctx_set(handle, 10, 0) }
        }
    }

    /// Makes every blocking call on this context's sockets fail with `ETERM`; sockets must still be closed.
    public func shutdown() {
        let shouldCall = state.withLock { state -> Bool in
            guard case .running = state else { return false }
            state = .shutDown
            return true
        }
        // zmq_ctx_shutdown fails only with EFAULT (not a context), impossible for a handle this
        // type made and has not yet terminated (the state above makes the call once).
        if shouldCall { _ = try? zmqCall("zmq_ctx_shutdown") { zmq_ctx_shutdown(handle) } }
    }

    /// Shuts down and destroys the context, waiting until every socket made from it is closed.
    ///
    /// Call it from a thread that owns no open socket of this context, or it waits forever,
    /// exactly as `zmq_ctx_term` does.
    public func terminate() {
        let shouldCall = state.withLock { state -> Bool in
            if case .terminated = state { return false }
            state = .terminated
            return true
        }
        // zmq_ctx_term fails with EFAULT (impossible, as above) or EINTR, which zmqCall retries:
        // nothing is left to report, and a caller terminating has no way to act on it.
        if shouldCall { _ = try? zmqCall("zmq_ctx_term") { zmq_ctx_term(handle) } }
    }

    /// Whether `shutdown()` or `terminate()` has been called.
    public var isShutDown: Bool {
        state.withLock { if case .running = $0 { return false } else { return true } }
    }

    deinit {
        // Sockets retain their context, so by now none is open and this cannot block.
        terminate()
    }

    /// Creates a socket of `type`; it belongs to the calling thread from now on (see `Socket`).
    public func socket(_ type: SocketType) throws(ZMQError) -> Socket {
        try Socket(context: self, type: type)
    }
}
