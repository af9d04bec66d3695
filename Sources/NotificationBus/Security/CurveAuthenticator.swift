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

/// The decisions and accounting of a CURVE server's ZAP handler, with no socket: answers ZAP
/// requests from per-domain allow lists, counts every outcome, and picks which to report.
struct CurveAuthenticator {
    /// The allow list of each domain; nil admits every CURVE client of that domain.
    let allowLists: [AuthenticationDomain: CurveAllowList?]
    private(set) var counts: [AuthenticationDomain: AuthenticationCounts] = [:]
    private var lastReports: [String: (occurrences: UInt64, reportedAt: UInt64?)] = [:]

    /// Beyond this many distinct keys and causes, the report table starts afresh (a flood of random
    /// keys cannot grow it without bound; the worst effect is a repeated log line).
    static let maximumTrackedKeys = 10_000

    init(allowLists: [AuthenticationDomain: CurveAllowList?]) {
        self.allowLists = allowLists
    }

    /// The reply to `request`, and the event to report, if any. `now` is monotonic nanoseconds.
    mutating func answer(_ request: ZAPRequest, now: UInt64) -> (ZAPReply, AuthenticationEvent?) {
        guard let domain = AuthenticationDomain(rawValue: request.domain), let allowList = allowLists[domain] else {
            // Not one of the sockets this handler guards: refuse, uncounted (no side to count it on).
            return (request.reply(.failure, text: "unknown ZAP domain '\(request.domain)'"), nil)
        }
        guard let key = request.curvePublicKey else {
            counts[domain, default: AuthenticationCounts()].failedHandshakes += 1
            let reason = "the \(request.mechanism) mechanism is not allowed: CURVE is required"
            let event = report(domain, .refused(reason: reason), key: nil, request.address, "mechanism", now, allowList)
            return (request.reply(.failure, text: reason), event)
        }
        if let allowList, allowList.name(of: key) == nil {
            counts[domain, default: AuthenticationCounts()].refusedKeys += 1
            let reason = "not in the allow list (\(allowList.source))"
            let event = report(domain, .refused(reason: reason), key: key, request.address, key, now, allowList)
            return (request.reply(.failure, text: "key not allowed"), event)
        }
        counts[domain, default: AuthenticationCounts()].admitted += 1
        let name = allowList?.name(of: key) ?? "any"
        let event = report(domain, .admitted(name: name), key: key, request.address, "admitted." + key, now, allowList)
        // The key as the connection's User-Id: a broker binds the publisher ids a connection uses
        // to it (`PublisherOwnership`), so the same client on any connection keeps its ids.
        return (request.reply(.success, text: "OK", userID: key), event)
    }

    /// Counts a failed handshake a server socket's monitor reported (ZAP refusals are already
    /// counted by `answer`); returns the event to report, if any.
    mutating func record(_ event: SocketEvent, domain: AuthenticationDomain, now: UInt64) -> AuthenticationEvent? {
        guard let failure = event.handshakeFailure else { return nil }
        if case .refused = failure { return nil }
        counts[domain, default: AuthenticationCounts()].failedHandshakes += 1
        let allowList = allowLists[domain] ?? nil
        return report(domain, .handshakeFailed(failure), key: nil, "", "failure.\(failure)", now, allowList)
    }

    private mutating func report(
        _ domain: AuthenticationDomain, _ outcome: AuthenticationEvent.Outcome, key: String?, _ address: String,
        _ reportKey: String, _ now: UInt64, _ allowList: CurveAllowList?
    ) -> AuthenticationEvent? {
        let tableKey = "\(domain.rawValue).\(reportKey)"
        if lastReports[tableKey] == nil && lastReports.count >= Self.maximumTrackedKeys { lastReports.removeAll() }
        var entry = lastReports[tableKey] ?? (0, nil)
        entry.occurrences += 1
        let due = entry.reportedAt.map { now >= $0 + AuthenticationEvent.reportIntervalInNanoseconds } ?? true
        if due { entry.reportedAt = now }
        lastReports[tableKey] = entry
        guard due else { return nil }
        return AuthenticationEvent(
            domain: domain, outcome: outcome, publicKey: key, address: address, allowListSource: allowList?.source,
            occurrences: entry.occurrences)
    }
}
