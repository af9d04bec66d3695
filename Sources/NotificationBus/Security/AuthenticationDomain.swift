import ZeroMQ

/// The ZAP domains a CURVE server socket reports, by who its clients are.
public enum AuthenticationDomain: String, Sendable, CaseIterable, Comparable {
    /// Clients that publish: a broker's frontend, a subscriber that binds.
    case publishers
    /// Clients that subscribe: a broker's backend, a publisher that binds.
    case subscribers

    /// "publisher" or "subscriber", for log lines.
    public var singular: String { String(rawValue.dropLast()) }

    /// Alphabetical, for stable report order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
