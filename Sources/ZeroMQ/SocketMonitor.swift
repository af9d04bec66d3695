import CZeroMQ

/// One event from a socket monitor.
public struct SocketEvent: Sendable, Equatable {
    /// The event (one bit).
    public let event: SocketEvents
    /// The event's value: an errno, a protocol error code, a status code or a file descriptor.
    public let value: UInt32
    /// The endpoint the event concerns (for accepted connections: the listening endpoint).
    public let endpoint: String

    /// Parses the two frames a monitor socket delivers: 6 bytes (event u16, value u32, host byte
    /// order) and the endpoint; nil for anything else.
    public init?(frames: [[UInt8]]) {
        guard frames.count == 2, frames[0].count == 6 else { return nil }
        event = SocketEvents(rawValue: frames[0].withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) })
        value = frames[0].withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 2, as: UInt32.self) }
        endpoint = String(decoding: frames[1], as: UTF8.self)
    }

    /// Why the handshake failed, for the three handshake-failure events; nil for other events.
    public var handshakeFailure: HandshakeFailure? {
        switch event {
        case .handshakeFailedAuthentication: return .refused(status: value)
        case .handshakeFailedNoDetail: return .system(errno: value)
        case .handshakeFailedProtocol:
            switch Int32(bitPattern: value) {
            case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH: return .mechanismMismatch
            case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC: return .cryptographic
            default: return .protocolError(code: value)
            }
        default: return nil
        }
    }
}

extension Socket {
    /// Starts `zmq_socket_monitor`: this socket publishes `events` on a PAIR socket bound at the
    /// `inproc://` `endpoint`; a PAIR socket (owned by any one thread) connects there and reads
    /// them with `receiveMultipart` and `SocketEvent(frames:)`. Call it before binding or connecting.
    ///
    /// libzmq sends events with a blocking send from its own I/O thread: a reader that stops
    /// reading, or closes while this socket is still monitored, stalls every socket of the context.
    /// So give the reader `.receiveHighWaterMark` 0 (no limit), keep it reading, and call
    /// `stopMonitoring()` before the reader closes.
    public func monitor(_ endpoint: String, events: SocketEvents) throws(ZMQError) {
        try checkOpen("zmq_socket_monitor")
        _ = try zmqCall("zmq_socket_monitor") { zmq_socket_monitor(handle, endpoint, Int32(events.rawValue)) }
    }

    /// Stops a monitor started with `monitor(_:events:)` (harmless when none runs).
    public func stopMonitoring() {
        // A closed socket has no monitor left to stop, and stopping (a nil endpoint) fails only on
        // a socket that is not one (ENOTSOCK) or a terminated context (ETERM): in each case no
        // monitor runs any more, which is what the call is for.
        guard (try? checkOpen("zmq_socket_monitor")) != nil else { return }
        _ = try? zmqCall("zmq_socket_monitor") { zmq_socket_monitor(handle, nil, 0) }
    }
}

extension Context {
    /// Starts monitoring `socket` for `events` and returns the PAIR socket that reads them, owned
    /// by the caller's thread: connected before the monitor starts and without a receive limit
    /// (libzmq blocks its I/O thread on a monitor without a reader, or with a full one). Call
    /// `socket.stopMonitoring()` before closing the reader.
    public func monitorReader(for socket: Socket, events: SocketEvents) throws(ZMQError) -> Socket {
        let endpoint = "inproc://nbus-monitor-\(UInt64.random(in: 1...UInt64.max))"
        let reader = try self.socket(.pair)
        do {
            try reader.set(.linger, .zero)
            try reader.set(.receiveHighWaterMark, 0)
            try reader.connect(endpoint)
            try socket.monitor(endpoint, events: events)
        } catch {
            reader.close()
            throw error
        }
        return reader
    }
}
