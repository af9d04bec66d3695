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
