import CZeroMQ

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
