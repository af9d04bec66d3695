import CZeroMQ

/// Readiness bits for `Poller`: `ZMQ_POLLIN`, `ZMQ_POLLOUT`, `ZMQ_POLLERR`.
public struct PollEvents: OptionSet, Sendable {
    /// The bits as `zmq_pollitem_t.events` holds them.
    public let rawValue: Int16
    /// The events whose bits are `rawValue`.
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// At least one message can be received without blocking.
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// At least one message can be sent without blocking.
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// An error condition (plain file descriptors only).
    public static let error = PollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// `zmq_poll` over sockets and plain file descriptors; like the sockets, used by one thread.
public struct Poller {
    private var items: [zmq_pollitem_t] = []
    private var sockets: [Socket?] = []

    /// Creates an empty poller.
    public init() {}

    /// The number of registered items.
    public var count: Int { items.count }

    /// Watches `socket` for `events`; returns the item's index for `ready(at:)`.
    @discardableResult
    public mutating func register(_ socket: Socket, for events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: socket.handle, fd: 0, events: events.rawValue, revents: 0))
        sockets.append(socket)
        return items.count - 1
    }

    /// Watches a plain file descriptor (a pipe, an eventfd) for `events`; returns its index.
    @discardableResult
    public mutating func register(fileDescriptor: Int32, for events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: events.rawValue, revents: 0))
        sockets.append(nil)
        return items.count - 1
    }

    /// Waits up to `timeout` (nil: until something is ready, `.zero`: just check) and returns how
    /// many items are ready. Sub-millisecond parts round up: `zmq_poll` counts milliseconds.
    @discardableResult
    public mutating func poll(timeout: Duration? = nil) throws(ZMQError) -> Int {
        guard let timeout else { return try poll(timeoutMilliseconds: -1) }
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0, timeout > .zero else { return try poll(timeoutMilliseconds: 0) }
        let milliseconds = seconds.multipliedReportingOverflow(by: 1_000)
        let rest = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        guard !milliseconds.overflow, milliseconds.partialValue < Int64(Int32.max) - rest else {
            return try poll(timeoutMilliseconds: Int(Int32.max))
        }
        return try poll(timeoutMilliseconds: Int(milliseconds.partialValue + rest))
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever, 0: just check) and returns how many items
    /// are ready: `zmq_poll`'s own form (`poll(timeout:)` takes a `Duration`).
    @discardableResult
    public mutating func poll(timeoutMilliseconds: Int) throws(ZMQError) -> Int {
        let count = Int32(items.count)
        let result = items.withUnsafeMutableBufferPointer { buffer in
            Result { () throws(ZMQError) in
                try zmqCall("zmq_poll") { zmq_poll(buffer.baseAddress, count, timeoutMilliseconds) }
            }
        }
        return Int(try result.get())
    }

    /// What the last `poll` found ready on item `index`.
    public func ready(at index: Int) -> PollEvents {
        PollEvents(rawValue: items[index].revents)
    }
}
