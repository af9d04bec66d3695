#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// What a broker tells its owner as it happens, on the broker's forwarding thread.
public enum BrokerEvent: Sendable, Hashable, CustomStringConvertible {
    /// A subscriber made no room for `waited`: notifications now go past it (and any other full
    /// subscriber), which lose them and count the loss by sequence number.
    case slowSubscriberStarted(waited: Duration)
    /// Every subscriber has room again, `after` the episode began; `sentPast` notifications went
    /// past a full one meanwhile.
    case slowSubscriberEnded(after: Duration, sentPast: UInt64)
    /// The broker's resident memory passed its limit: it dropped every connection (peers
    /// reconnect at once; what was in flight is lost and counted as gaps by subscribers).
    case memoryLimitReached(residentBytes: UInt64, limitBytes: UInt64)
    /// After a memory reset the broker could not listen on `endpoint` again: that side takes no
    /// new connection until the broker restarts.
    case rebindFailed(endpoint: String)
    /// `open` connections, 90% of what the open-files limit allows (`limit`).
    case connectionsNearLimit(open: Int, limit: Int)
    /// accept() fails (`errno`, 24 is EMFILE: out of file descriptors); logged at most every 10 s.
    case acceptFailing(errno: UInt32, open: Int, failures: UInt64)
    /// A subscriber past its budget took nothing for the broker's patience (stopped, frozen): it
    /// was disconnected so the others go on. It reconnects by itself and counts what it missed as
    /// a gap. `connection` is nil when the broker's records do not know it (an accept not yet read).
    case stalledSubscriberDisconnected(BrokerConnection?, unsentBytes: Int)
    /// A subscriber past its budget kept taking something but stayed past it while the broker
    /// held everybody back for it (flow control) for its longest hold (10 s): it was disconnected,
    /// as NATS disconnects a slow consumer. It reconnects by itself and counts what it missed as
    /// a gap. `connection` is nil when the broker's records do not know it.
    case slowSubscriberDisconnected(BrokerConnection?, unsentBytes: Int)
    /// A peer connected (before any CURVE handshake: its key is not known yet).
    case connectionAccepted(BrokerConnection)
    /// A peer's connection ended (it left, was dropped by TCP keepalive, or failed its handshake).
    case connectionClosed(BrokerConnection)
    /// A frontend peer sent frames carrying `publisherID`, which another connection (with CURVE:
    /// another key) used first: refused, neither forwarded nor kept for a replay (a publisher id
    /// is one publisher's own; see `PublisherOwnership`). `frames` were refused since the last
    /// such report (at most one every 10 s); `claimant` and `owner` are nil when the broker's
    /// records do not know the connection (an upstream link, an accept not yet read).
    case foreignPublisherIDRefused(publisherID: UInt64, claimant: BrokerConnection?, owner: BrokerConnection?, frames: UInt64)

    /// Retained values were evicted to keep within `BrokerConfiguration.retainedNames` and
    /// `retainedBytes`: `count` since the last such report (at most one every 10 s), the last of
    /// them `lastName`.
    case retainedEvicted(count: UInt64, lastName: String, names: Int, bytes: Int)

    public var description: String {
        switch self {
        case .retainedEvicted(let count, let lastName, let names, let bytes):
            return "evicted \(count) retained value(s) (the last: \(lastName)) to stay within the bounds; "
                + "\(names) name(s), \(bytes) bytes kept: new subscribers no longer get those names' current value"
        case .slowSubscriberStarted(let waited):
            return "slow subscriber: one made no room for \(Timestamps.boundedMilliseconds(waited)) ms; sending past full subscribers "
                + "(they lose those notifications and count them as gaps)"
        case .slowSubscriberEnded(let after, let sentPast):
            return "slow subscriber caught up after \(Timestamps.boundedMilliseconds(after)) ms; \(sentPast) notification(s) went past a full subscriber"
        case .memoryLimitReached(let resident, let limit):
            return "memory \(resident >> 20) MiB is over the limit of \(limit >> 20) MiB: dropped every connection "
                + "(a peer holding memory, e.g. a message it never finishes, or too many slow subscribers); they reconnect"
        case .rebindFailed(let endpoint):
            return "could not listen on \(endpoint) again after a memory reset: restart the broker"
        case .connectionsNearLimit(let open, let limit):
            return "\(open) connections open, 90% of the \(limit) the open-files limit allows: past it new clients "
                + "are shut out (raise LimitNOFILE / ulimit -Hn, or limit who can connect)"
        case .acceptFailing(let errno, let open, let failures):
            return "cannot accept new connections (errno \(errno)\(errno == 24 ? ", out of file descriptors" : "")) with \(open) open; "
                + "\(failures) failure(s) so far: new clients are shut out until some leave"
        case .stalledSubscriberDisconnected(let connection, let unsent):
            let who = connection.map { "subscriber on \($0.endpoint)\(Self.peer($0))" } ?? "a subscriber"
            return "slow subscriber: disconnected \(who), past its budget and taking nothing (\(unsent) bytes unsent); "
                + "the others go on, it reconnects and counts what it missed"
        case .slowSubscriberDisconnected(let connection, let unsent):
            let who = connection.map { "subscriber on \($0.endpoint)\(Self.peer($0))" } ?? "a subscriber"
            return "slow subscriber: disconnected \(who), past its budget for 10 s although taking something, "
                + "everybody held back for it meanwhile (\(unsent) bytes unsent); it reconnects and counts what it missed"
        case .connectionAccepted(let connection):
            return "\(connection.side) connected on \(connection.endpoint)\(Self.peer(connection))"
        case .connectionClosed(let connection):
            return "\(connection.side) disconnected from \(connection.endpoint)\(Self.peer(connection))"
        case .foreignPublisherIDRefused(let publisherID, let claimant, let owner, let frames):
            let id = ControlNames.hex(publisherID)
            let from = claimant.map { "a publisher on \($0.endpoint)\(Self.peer($0))" } ?? "a frontend connection"
            let first = owner.map { "its publisher on \($0.endpoint)\(Self.peer($0))" } ?? "another connection"
            return "refused \(frames) frame(s) from \(from) carrying publisher id \(id), which \(first) used first: "
                + "a peer speaking for another publisher (a forged end of stream or sequence) is not forwarded"
        }
    }

    /// Whether the event is routine (a connection coming or going), for a debug-level log line.
    public var isRoutine: Bool {
        switch self {
        case .connectionAccepted, .connectionClosed: return true
        default: return false
        }
    }

    private static func peer(_ connection: BrokerConnection) -> String {
        var text = ""
        if !connection.peerAddress.isEmpty { text += " from \(connection.peerAddress)" }
        if let pid = connection.processID { text += " (pid \(pid))" }
        if let key = connection.curveKey { text += " key \(key)" }
        return text
    }
}
