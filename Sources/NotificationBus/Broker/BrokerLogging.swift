import Logging

extension BrokerEvent {
    /// Logs the event at its level: connections coming and going at debug (with side, peer, pid
    /// and CURVE key as fields), a slow subscriber caught up at notice, the rest (slow subscribers,
    /// memory resets, the open-files limit near, accept failing) as warnings.
    public func log(to logger: Logger) {
        switch self {
        case .connectionAccepted(let connection), .connectionClosed(let connection):
            var fields: Logger.Metadata = ["side": "\(connection.side)", "endpoint": "\(connection.endpoint)"]
            if !connection.peerAddress.isEmpty { fields["peer"] = "\(connection.peerAddress)" }
            if let pid = connection.processID { fields["pid"] = .stringConvertible(pid) }
            if let key = connection.curveKey { fields["key"] = "\(key)" }
            logger.debug("\(self)", metadata: fields)
        case .slowSubscriberEnded:
            logger.notice("\(self)")
        default:
            logger.warning("\(self)")
        }
    }
}

extension AuthenticationEvent {
    /// Logs the outcome (already rate-limited per key, see `CurveAuthenticator`): admissions at
    /// info, refusals and failed handshakes as warnings, with the side and key as fields.
    public func log(to logger: Logger) {
        var fields: Logger.Metadata = ["side": "\(domain.singular)"]
        if let publicKey { fields["key"] = "\(publicKey)" }
        if case .admitted = outcome {
            logger.info("\(self)", metadata: fields)
        } else {
            logger.warning("\(self)", metadata: fields)
        }
    }
}
