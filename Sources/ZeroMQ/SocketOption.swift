import CZeroMQ

/// A value type libzmq options can hold: an `int`, a boolean `int`, a byte string or a text string.
public protocol SocketOptionValue: Sendable {
    /// Calls `zmq_setsockopt` with this value.
    func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError)
    /// Reads the option with `zmq_getsockopt`.
    static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> Self
}

/// A typed socket option: `socket.set(.sendHighWaterMark, 1000)`, `try socket.get(.linger)`.
///
/// Some options are write-only in libzmq (`subscribe`, `xpubVerbose`, `xpubNoDrop`,
/// `conflate`, `curveSecretKey` on some builds): reading them throws `EINVAL`.
public struct SocketOption<Value: SocketOptionValue>: Sendable, CustomStringConvertible {
    /// The libzmq option constant.
    public let rawValue: Int32
    /// A readable name for errors and logs.
    public let name: String

    /// Wraps a libzmq option constant not listed here.
    public init(rawValue: Int32, name: String) {
        self.rawValue = rawValue
        self.name = name
    }

    public var description: String { name }
}

extension Int32: SocketOptionValue {
    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        var value = self
        _ = try zmqCall("zmq_setsockopt") { zmq_setsockopt(handle, name, &value, MemoryLayout<Int32>.size) }
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> Int32 {
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        _ = try zmqCall("zmq_getsockopt") { zmq_getsockopt(handle, name, &value, &size) }
        return value
    }
}

extension Duration: SocketOptionValue {
    /// `duration` in libzmq's milliseconds: a positive span under a millisecond is 1 ms (0 would
    /// mean "none" or "do not wait"), a negative one 0, and past `Int32.max` ms it saturates.
    static func zmqMilliseconds(_ duration: Duration) -> Int32 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let whole = seconds.multipliedReportingOverflow(by: 1_000)
        let rest = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        guard !whole.overflow else { return Int32.max }
        return Int32(clamping: whole.partialValue &+ rest)
    }

    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        try Self.zmqMilliseconds(self).setOption(name, on: handle)
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> Duration {
        .milliseconds(try Int32.getOption(name, on: handle))
    }
}

/// A time option where libzmq's -1 means "forever" (linger until sent, block until done): nil.
extension Optional: SocketOptionValue where Wrapped == Duration {
    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        try (self.map(Duration.zmqMilliseconds) ?? -1).setOption(name, on: handle)
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> Duration? {
        let milliseconds = try Int32.getOption(name, on: handle)
        return milliseconds < 0 ? nil : .milliseconds(milliseconds)
    }
}

extension Int64: SocketOptionValue {
    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        var value = self
        _ = try zmqCall("zmq_setsockopt") { zmq_setsockopt(handle, name, &value, MemoryLayout<Int64>.size) }
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> Int64 {
        var value: Int64 = 0
        var size = MemoryLayout<Int64>.size
        _ = try zmqCall("zmq_getsockopt") { zmq_getsockopt(handle, name, &value, &size) }
        return value
    }
}

extension Bool: SocketOptionValue {
    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        try Int32(self ? 1 : 0).setOption(name, on: handle)
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> Bool {
        try Int32.getOption(name, on: handle) != 0
    }
}

extension Array: SocketOptionValue where Element == UInt8 {
    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        let result = withUnsafeBytes { buffer in
            Result { () throws(ZMQError) in
                try zmqCall("zmq_setsockopt") { zmq_setsockopt(handle, name, buffer.baseAddress, buffer.count) }
            }
        }
        _ = try result.get()
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> [UInt8] {
        // libzmq wants exactly 32 bytes for binary CURVE keys, and room for the value otherwise.
        let isCurveKey = name == ZMQ_CURVE_PUBLICKEY || name == ZMQ_CURVE_SECRETKEY || name == ZMQ_CURVE_SERVERKEY
        var buffer = [UInt8](repeating: 0, count: isCurveKey ? 32 : 1024)
        var size = buffer.count
        let result = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(ZMQError) in
                try zmqCall("zmq_getsockopt") { zmq_getsockopt(handle, name, raw.baseAddress, &size) }
            }
        }
        _ = try result.get()
        return Array(buffer.prefix(size))
    }
}

extension String: SocketOptionValue {
    public func setOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) {
        try Array(utf8).setOption(name, on: handle)
    }

    public static func getOption(_ name: Int32, on handle: UnsafeMutableRawPointer) throws(ZMQError) -> String {
        var bytes = try [UInt8].getOption(name, on: handle)
        // libzmq returns string options NUL-terminated.
        while bytes.last == 0 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension SocketOption where Value == Int32 {
    /// `ZMQ_SNDHWM`: messages queued per peer before PUB drops or others block.
    public static var sendHighWaterMark: Self { .init(rawValue: ZMQ_SNDHWM, name: "ZMQ_SNDHWM") }
    /// `ZMQ_RCVHWM`: messages queued on receive per peer.
    public static var receiveHighWaterMark: Self { .init(rawValue: ZMQ_RCVHWM, name: "ZMQ_RCVHWM") }
    /// `ZMQ_RCVBUF`: the kernel's receive buffer of each connection, in bytes (-1: the system's).
    public static var receiveBuffer: Self { .init(rawValue: ZMQ_RCVBUF, name: "ZMQ_RCVBUF") }
    /// `ZMQ_TCP_KEEPALIVE`: -1 OS default, 0 off, 1 on.
    public static var tcpKeepalive: Self { .init(rawValue: ZMQ_TCP_KEEPALIVE, name: "ZMQ_TCP_KEEPALIVE") }
    /// `ZMQ_TCP_KEEPALIVE_IDLE`: seconds idle before keepalive probes.
    public static var tcpKeepaliveIdle: Self {
        .init(rawValue: ZMQ_TCP_KEEPALIVE_IDLE, name: "ZMQ_TCP_KEEPALIVE_IDLE")
    }
    /// `ZMQ_TCP_KEEPALIVE_INTVL`: seconds between keepalive probes.
    public static var tcpKeepaliveInterval: Self {
        .init(rawValue: ZMQ_TCP_KEEPALIVE_INTVL, name: "ZMQ_TCP_KEEPALIVE_INTVL")
    }
    /// `ZMQ_TCP_KEEPALIVE_CNT`: probes before the connection is dropped.
    public static var tcpKeepaliveCount: Self {
        .init(rawValue: ZMQ_TCP_KEEPALIVE_CNT, name: "ZMQ_TCP_KEEPALIVE_CNT")
    }
    /// `ZMQ_EVENTS` (read-only): `ZMQ_POLLIN`/`ZMQ_POLLOUT` bits; reading it also settles `ZMQ_FD`'s edge.
    public static var events: Self { .init(rawValue: ZMQ_EVENTS, name: "ZMQ_EVENTS") }
    /// `ZMQ_TYPE` (read-only): the socket type constant.
    public static var type: Self { .init(rawValue: ZMQ_TYPE, name: "ZMQ_TYPE") }
    /// `ZMQ_FD` (read-only): the edge-triggered notification file descriptor.
    public static var fileDescriptor: Self { .init(rawValue: ZMQ_FD, name: "ZMQ_FD") }
}

extension SocketOption where Value == Duration {
    /// `ZMQ_HEARTBEAT_IVL`: between ZMTP PINGs on each connection (`.zero`: no heartbeats). Beware:
    /// libzmq 4.3 aborts the process when a connection whose input is held back sees its peer leave
    /// and then handles a heartbeat; NotificationBus uses TCP keepalive instead.
    public static var heartbeatInterval: Self { .init(rawValue: ZMQ_HEARTBEAT_IVL, name: "ZMQ_HEARTBEAT_IVL") }
    /// `ZMQ_HEARTBEAT_TIMEOUT`: without any traffic after a PING before the connection is
    /// dropped as dead (and reconnected, on a connecting socket).
    public static var heartbeatTimeout: Self { .init(rawValue: ZMQ_HEARTBEAT_TIMEOUT, name: "ZMQ_HEARTBEAT_TIMEOUT") }
    /// `ZMQ_HEARTBEAT_TTL`: how long the peer should wait for traffic from this side before
    /// dropping it (sent in each PING; libzmq rounds to deciseconds).
    public static var heartbeatTTL: Self { .init(rawValue: ZMQ_HEARTBEAT_TTL, name: "ZMQ_HEARTBEAT_TTL") }
    /// `ZMQ_TCP_MAXRT` (Linux `TCP_USER_TIMEOUT`): how long sent data may stay unacknowledged, or a
    /// peer's receive window stay closed, before the connection is dropped (`.zero`: the system's).
    public static var tcpMaximumRetransmitTime: Self { .init(rawValue: ZMQ_TCP_MAXRT, name: "ZMQ_TCP_MAXRT") }
    /// `ZMQ_RECONNECT_IVL_MAX`: upper bound of the exponential reconnect back-off (`.zero`: none).
    public static var reconnectIntervalMax: Self {
        .init(rawValue: ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX")
    }
}

extension SocketOption where Value == Duration? {
    /// `ZMQ_LINGER`: how long to keep unsent messages after close (nil: until sent, `.zero`: discard).
    public static var linger: Self { .init(rawValue: ZMQ_LINGER, name: "ZMQ_LINGER") }
    /// `ZMQ_RCVTIMEO`: how long a blocking receive waits before `EAGAIN` (nil: forever).
    public static var receiveTimeout: Self { .init(rawValue: ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO") }
    /// `ZMQ_SNDTIMEO`: how long a blocking send waits before `EAGAIN` (nil: forever).
    public static var sendTimeout: Self { .init(rawValue: ZMQ_SNDTIMEO, name: "ZMQ_SNDTIMEO") }
    /// `ZMQ_RECONNECT_IVL`: before the first reconnect attempt (nil: libzmq's -1, never reconnect).
    public static var reconnectInterval: Self { .init(rawValue: ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL") }
}

extension SocketOption where Value == Bool {
    /// `ZMQ_XPUB_VERBOSE`: pass every subscribe message upstream, not just the first per topic.
    public static var xpubVerbose: Self { .init(rawValue: ZMQ_XPUB_VERBOSE, name: "ZMQ_XPUB_VERBOSE") }
    /// `ZMQ_XPUB_VERBOSER`: also pass every unsubscribe message upstream.
    public static var xpubVerboser: Self { .init(rawValue: ZMQ_XPUB_VERBOSER, name: "ZMQ_XPUB_VERBOSER") }
    /// `ZMQ_XPUB_NODROP`: at the HWM, send fails with `EAGAIN` instead of dropping silently.
    public static var xpubNoDrop: Self { .init(rawValue: ZMQ_XPUB_NODROP, name: "ZMQ_XPUB_NODROP") }
    /// `ZMQ_ROUTER_MANDATORY`: a ROUTER's send to a routing id it no longer knows fails with
    /// `EHOSTUNREACH` instead of vanishing.
    public static var routerMandatory: Self { .init(rawValue: ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY") }
    /// `ZMQ_IMMEDIATE`: queue messages only to completed connections. On a connecting socket the
    /// pipe to a peer then exists only while connected: a lost connection ends it (an XPUB sees
    /// that peer's subscriptions leave), and a reconnection makes a fresh one.
    public static var immediate: Self { .init(rawValue: ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE") }
    /// `ZMQ_CONFLATE`: keep only the last message (single-part only).
    public static var conflate: Self { .init(rawValue: ZMQ_CONFLATE, name: "ZMQ_CONFLATE") }
    /// `ZMQ_CURVE_SERVER`: act as the CURVE server (needs `curveSecretKey`).
    public static var curveServer: Self { .init(rawValue: ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER") }
    /// `ZMQ_ZAP_ENFORCE_DOMAIN` (93; a draft option libzmq 4.3 accepts): fail every handshake when no
    /// ZAP handler answers, instead of admitting the peer. Fail-closed for a server with an allow list.
    public static var zapEnforceDomain: Self { .init(rawValue: 93, name: "ZMQ_ZAP_ENFORCE_DOMAIN") }
    /// `ZMQ_RCVMORE` (read-only): the last received frame has more parts after it.
    public static var receiveMore: Self { .init(rawValue: ZMQ_RCVMORE, name: "ZMQ_RCVMORE") }
}

extension SocketOption where Value == Int64 {
    /// `ZMQ_MAXMSGSIZE`: the largest inbound frame (bytes) a peer may send; libzmq disconnects a
    /// peer that announces a larger one before reading it (-1: no limit). On an XPUB the inbound
    /// frames are subscription messages, so this bounds a subscription's size too.
    public static var maximumMessageSize: Self { .init(rawValue: ZMQ_MAXMSGSIZE, name: "ZMQ_MAXMSGSIZE") }
}

extension SocketOption where Value == [UInt8] {
    /// `ZMQ_SUBSCRIBE` (write-only): add a prefix filter on a SUB socket.
    public static var subscribe: Self { .init(rawValue: ZMQ_SUBSCRIBE, name: "ZMQ_SUBSCRIBE") }
    /// `ZMQ_UNSUBSCRIBE` (write-only): remove one previously added prefix filter.
    public static var unsubscribe: Self { .init(rawValue: ZMQ_UNSUBSCRIBE, name: "ZMQ_UNSUBSCRIBE") }
    /// `ZMQ_ROUTING_ID`: this socket's identity as seen by a ROUTER peer.
    public static var routingID: Self { .init(rawValue: ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID") }
    /// `ZMQ_CURVE_PUBLICKEY`: this socket's long-term public key, 32 bytes.
    public static var curvePublicKey: Self { .init(rawValue: ZMQ_CURVE_PUBLICKEY, name: "ZMQ_CURVE_PUBLICKEY") }
    /// `ZMQ_CURVE_SECRETKEY`: this socket's long-term secret key, 32 bytes.
    public static var curveSecretKey: Self { .init(rawValue: ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY") }
    /// `ZMQ_CURVE_SERVERKEY`: the server's public key, set on a CURVE client, 32 bytes.
    public static var curveServerKey: Self { .init(rawValue: ZMQ_CURVE_SERVERKEY, name: "ZMQ_CURVE_SERVERKEY") }
}

extension SocketOption where Value == String {
    /// `ZMQ_ZAP_DOMAIN`: the authentication domain passed to the ZAP handler.
    public static var zapDomain: Self { .init(rawValue: ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN") }
    /// `ZMQ_LAST_ENDPOINT` (read-only): the endpoint last bound, with the real port for `tcp://...:*`.
    public static var lastEndpoint: Self { .init(rawValue: ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT") }
}
