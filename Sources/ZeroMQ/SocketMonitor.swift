import CZeroMQ

/// The `zmq_socket_monitor` events this wrapper names (`ZMQ_EVENT_*` bits).
public struct SocketEvents: OptionSet, Sendable, Hashable {
    /// The `ZMQ_EVENT_*` bits.
    public let rawValue: UInt16
    /// Events from raw `ZMQ_EVENT_*` bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// `ZMQ_EVENT_CONNECTED`: a connect reached its peer (before any handshake).
    public static let connected = SocketEvents(rawValue: UInt16(ZMQ_EVENT_CONNECTED))
    /// `ZMQ_EVENT_ACCEPTED`: a bound socket accepted a connection (before any handshake).
    public static let accepted = SocketEvents(rawValue: UInt16(ZMQ_EVENT_ACCEPTED))
    /// `ZMQ_EVENT_ACCEPT_FAILED`: a bound socket could not accept a connection (value: errno,
    /// `EMFILE` when the process is out of file descriptors).
    public static let acceptFailed = SocketEvents(rawValue: UInt16(ZMQ_EVENT_ACCEPT_FAILED))
    /// `ZMQ_EVENT_DISCONNECTED`: a session ended.
    public static let disconnected = SocketEvents(rawValue: UInt16(ZMQ_EVENT_DISCONNECTED))
    /// `ZMQ_EVENT_MONITOR_STOPPED`: the last event; the monitored socket closed or stopped monitoring.
    public static let monitorStopped = SocketEvents(rawValue: UInt16(ZMQ_EVENT_MONITOR_STOPPED))
    /// `ZMQ_EVENT_HANDSHAKE_SUCCEEDED`: the security handshake (and ZAP, if any) passed.
    public static let handshakeSucceeded = SocketEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
    /// `ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL`: the handshake failed with a system error (value: errno).
    public static let handshakeFailedNoDetail = SocketEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL))
    /// `ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL`: a protocol error (value: a `ZMQ_PROTOCOL_ERROR_*`).
    public static let handshakeFailedProtocol = SocketEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
    /// `ZMQ_EVENT_HANDSHAKE_FAILED_AUTH`: ZAP refused the peer (value: the status code, 300/400/500).
    public static let handshakeFailedAuthentication = SocketEvents(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
    /// The three handshake failures.
    public static let handshakeFailures: SocketEvents = [
        .handshakeFailedNoDetail, .handshakeFailedProtocol, .handshakeFailedAuthentication,
    ]
}

/// Why a security handshake failed, from a monitor event.
public enum HandshakeFailure: Sendable, Hashable, CustomStringConvertible {
    /// The peers use different mechanisms: a plaintext (NULL) peer met a CURVE one, or the reverse.
    case mechanismMismatch
    /// A CURVE box did not open: typically a client using the wrong server public key.
    case cryptographic
    /// The server's ZAP handler refused the client (status 400, or 300/500).
    case refused(status: UInt32)
    /// Another ZMTP or ZAP protocol error (`ZMQ_PROTOCOL_ERROR_*`).
    case protocolError(code: UInt32)
    /// A system error during the handshake, e.g. `EPIPE` when the server hung up on a wrong key.
    case system(errno: UInt32)

    public var description: String {
        switch self {
        case .mechanismMismatch: return "security mechanism mismatch (a plaintext peer meets a CURVE one)"
        case .cryptographic: return "CURVE cryptographic error (wrong server key?)"
        case .refused(let status): return "refused by the server's authentication (ZAP \(status))"
        case .protocolError(let code): return "protocol error 0x\(String(code, radix: 16))"
        case .system(let code): return "connection dropped during the handshake (\(ZMQError(code: Int32(bitPattern: code), operation: "handshake").message))"
        }
    }
}

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
