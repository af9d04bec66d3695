/// A ZAP authentication request (RFC 27, ZAP/1.0), as libzmq sends it to the handler bound at
/// `ZAPRequest.handlerEndpoint` in the same context, once per handshake of a CURVE (or PLAIN)
/// server socket.
public struct ZAPRequest: Sendable, Equatable {
    /// Where a ZAP handler binds (a REP or ROUTER socket) in the context of the sockets it guards.
    public static let handlerEndpoint = "inproc://zeromq.zap.01"

    /// The protocol version; libzmq sends "1.0".
    public let version: String
    /// Opaque; the reply must carry it back.
    public let requestID: [UInt8]
    /// The server socket's `ZMQ_ZAP_DOMAIN` (which side of a broker, for instance).
    public let domain: String
    /// The peer's address as libzmq gives it: the IP address for tcp, a local description for ipc.
    public let address: String
    /// The peer's routing id, usually empty.
    public let identity: [UInt8]
    /// "NULL", "PLAIN" or "CURVE".
    public let mechanism: String
    /// Mechanism-specific: CURVE sends the client's 32-byte long-term public key.
    public let credentials: [[UInt8]]

    /// Parses a request's frames; nil when there are fewer than the six fixed frames.
    public init?(frames: [[UInt8]]) {
        guard frames.count >= 6 else { return nil }
        version = String(decoding: frames[0], as: UTF8.self)
        requestID = frames[1]
        domain = String(decoding: frames[2], as: UTF8.self)
        address = String(decoding: frames[3], as: UTF8.self)
        identity = frames[4]
        mechanism = String(decoding: frames[5], as: UTF8.self)
        credentials = Array(frames.dropFirst(6))
    }

    /// The client's CURVE public key in Z85, or nil when the request is not a well-formed CURVE one.
    public var curvePublicKey: String? {
        guard mechanism == "CURVE", credentials.count == 1, credentials[0].count == 32 else { return nil }
        // 32 bytes always encode (Z85 takes multiples of 4): nil here is unreachable, and the
        // caller already treats nil as "not a CURVE request" and refuses it.
        return try? Z85.encode(credentials[0])
    }

    /// The reply to this request with `status`; `userID` becomes the connection's `User-Id` property.
    public func reply(_ status: ZAPStatus, text: String, userID: String = "") -> ZAPReply {
        ZAPReply(requestID: requestID, status: status, statusText: text, userID: userID)
    }
}
