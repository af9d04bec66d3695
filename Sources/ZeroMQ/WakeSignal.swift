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
        _ = try? systemCall("close") { close(fileDescriptor) }
    }

    /// Wakes the poller. A saturated counter (`EAGAIN`) is already a pending wake.
    public func signal() {
        var one: UInt64 = 1
        _ = try? systemCall("write") { Int32(write(fileDescriptor, &one, 8)) }
    }

    /// Resets the signal after a wake; nothing happens if it was not signalled.
    public func drain() {
        var value: UInt64 = 0
        _ = try? systemCall("read") { Int32(read(fileDescriptor, &value, 8)) }
    }
}
