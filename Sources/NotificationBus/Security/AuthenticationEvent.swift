import ZeroMQ

/// What a CURVE server did with the handshakes on one side (a broker's frontend or backend).
public struct AuthenticationCounts: Hashable, Sendable, Codable {
    /// Handshakes admitted: the client's key is on the allow list (ZAP 200).
    public var admitted: UInt64 = 0
    /// Handshakes refused because the client's key is not on the allow list (ZAP 400).
    public var refusedKeys: UInt64 = 0
    /// Handshakes that failed before a key was checked: plaintext peers (which the server sees
    /// either as a mechanism mismatch or as a peer hanging up, whichever side notices first), a
    /// client using the wrong server key, a malformed handshake.
    public var failedHandshakes: UInt64 = 0

    /// Zero counters.
    public init() {}

    /// Every refusal, whatever the cause.
    public var refusedTotal: UInt64 { refusedKeys + failedHandshakes }

    /// The counts of two sides (or servers) added up.
    public static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.admitted += rhs.admitted
        sum.refusedKeys += rhs.refusedKeys
        sum.failedHandshakes += rhs.failedHandshakes
        return sum
    }
}

/// One authentication outcome worth logging, as a CURVE server's authentication thread saw it.
///
/// Events are rate-limited: the first for a key (or, for failed handshakes, a cause) is reported
/// at once, repeats at most once per `AuthenticationEvent.reportInterval`, with `occurrences`
/// saying how many there were in all. Counters (`AuthenticationCounts`) count every one.
public struct AuthenticationEvent: Sendable, Equatable, CustomStringConvertible {
    /// What happened.
    public enum Outcome: Sendable, Equatable {
        /// The key is on the allow list, under `name` (its file's name).
        case admitted(name: String)
        /// The key is not on the allow list (or the request was not CURVE).
        case refused(reason: String)
        /// The handshake failed before ZAP was asked: plaintext peer, wrong server key...
        case handshakeFailed(HandshakeFailure)
    }

    /// Repeats of one key's (or cause's) outcome are reported at most this often: 10 s.
    public static let reportInterval: Duration = .seconds(10)

    /// `reportInterval` for the monotonic clock's arithmetic.
    static let reportIntervalInNanoseconds: UInt64 = 10_000_000_000

    /// Which side: the clients that publish or that subscribe.
    public let domain: AuthenticationDomain
    /// The outcome.
    public let outcome: Outcome
    /// The client's CURVE public key (Z85), when it got as far as sending one.
    public let publicKey: String?
    /// The peer's address as libzmq gives it (empty when unknown).
    public let address: String
    /// Where the allow list came from (for refusals), e.g. the folder.
    public let allowListSource: String?
    /// How many times this outcome happened for this key (or cause) so far, this one included.
    public let occurrences: UInt64

    public var description: String {
        let times = occurrences > 1 ? " (\(occurrences) times so far)" : ""
        let from = address.isEmpty ? "" : " from \(address)"
        switch outcome {
        case .admitted(let name):
            return "admitted \(domain.singular) '\(name)' (key \(publicKey ?? "?"))\(from)\(times)"
        case .refused(let reason):
            return "refused \(domain.singular) key \(publicKey ?? "(none)")\(from): \(reason)\(times)"
        case .handshakeFailed(.system(let code)):
            // What a server sees when a plaintext client reads its CURVE greeting and hangs up first.
            return "refused a \(domain.singular) handshake\(from): the client hung up during the handshake "
                + "(\(ZMQError(code: Int32(bitPattern: code), operation: "handshake").message)): a plaintext client, "
                + "or one not speaking CURVE\(times)"
        case .handshakeFailed(let failure):
            return "refused a \(domain.singular) handshake\(from): \(failure)\(times)"
        }
    }
}
