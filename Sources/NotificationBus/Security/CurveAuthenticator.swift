import ZeroMQ

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
