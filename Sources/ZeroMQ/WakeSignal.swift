import CZeroMQ

#if canImport(Glibc)
import Glibc
#endif

/// An eventfd a `Poller` can watch, so another thread can wake a thread parked in `zmq_poll`.
/// Thread-safe: signalling from any thread is the point of it.
public final class WakeSignal: Sendable {
    /// The eventfd; register it with `Poller.register(fileDescriptor:)`.
    public let fileDescriptor: Int32

    /// Creates the eventfd (non-blocking, close-on-exec).
    public init() throws(ZMQError) {
        fileDescriptor = try systemCall("eventfd") { czmq_eventfd() }
    }

    deinit {
        // Nothing to do with a failed close in a deinit: the descriptor is gone either way (Linux
        // frees it even when close reports an error), and no caller is left to tell.
        _ = try? systemCall("close") { close(fileDescriptor) }
    }

    /// Wakes the poller. A saturated counter (`EAGAIN`) is already a pending wake.
    public func signal() {
        var one: UInt64 = 1
        // The only failure of an 8-byte write to a valid eventfd is EAGAIN (the counter is
        // saturated), and a saturated counter is already a wake-up pending: nothing is lost.
        _ = try? systemCall("write") { Int32(write(fileDescriptor, &one, 8)) }
    }

    /// Resets the signal after a wake; nothing happens if it was not signalled.
    public func drain() {
        var value: UInt64 = 0
        // EAGAIN means nothing was signalled (the descriptor is non-blocking), which is what
        // a drain wants to reach anyway; the value read is not needed, only the reset.
        _ = try? systemCall("read") { Int32(read(fileDescriptor, &value, 8)) }
    }
}
