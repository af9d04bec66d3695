/// A ZAP reply: version, request id, status code and text, user id and (empty) metadata.
public struct ZAPReply: Sendable, Equatable {
    /// The request id, copied from the request.
    public let requestID: [UInt8]
    /// The decision.
    public let status: ZAPStatus
    /// Human-readable text for the status; libzmq passes it to the client in the CURVE ERROR command.
    public let statusText: String
    /// The authenticated identity, readable on received messages as the `User-Id` property.
    public let userID: String

    /// A reply with every field given.
    public init(requestID: [UInt8], status: ZAPStatus, statusText: String, userID: String = "") {
        self.requestID = requestID
        self.status = status
        self.statusText = statusText
        self.userID = userID
    }

    /// The six frames to send back on the handler socket.
    public var frames: [[UInt8]] {
        [Array("1.0".utf8), requestID, Array(status.rawValue.utf8), Array(statusText.utf8), Array(userID.utf8), []]
    }
}
