/// The retained values a broker keeps now (NBP-1 §18), as `Broker.retainedValues(limit:)` lists
/// them: their totals, and the first names in name order with each value's size and expiry.
public struct BrokerRetainedValues: Hashable, Sendable {
    /// One kept value.
    public struct Value: Hashable, Sendable {
        /// The notification name.
        public var name: String
        /// The value's size as kept: its encoded frame, what `BrokerConfiguration.retainedBytes` bounds.
        public var bytes: Int
        /// How long until it expires (its `retain-for`), in seconds; nil: it never does.
        public var expiresInSeconds: Double?

        public init(name: String, bytes: Int, expiresInSeconds: Double? = nil) {
            self.name = name
            self.bytes = bytes
            self.expiresInSeconds = expiresInSeconds
        }
    }

    /// Names whose value is kept (every one, not only those listed).
    public var count: Int
    /// Their bytes, as `BrokerConfiguration.retainedBytes` counts them.
    public var bytes: Int
    /// The first `limit` of them in name order (byte order of their UTF-8).
    public var values: [Value]
    /// Whether more names are kept than `values` lists.
    public var truncated: Bool

    public init(count: Int = 0, bytes: Int = 0, values: [Value] = [], truncated: Bool = false) {
        self.count = count
        self.bytes = bytes
        self.values = values
        self.truncated = truncated
    }
}

extension RetainedStore {
    /// What is kept now, the first `limit` names in name order, with the values whose
    /// `retain-for` passed dropped first (never listed, as they are never sent; their number
    /// returned in `expired`). O(n log limit): the listing of a store of millions of names
    /// sorts no more than `2 * limit` names at a time.
    mutating func listing(limit: Int, now: UInt64) -> (listing: BrokerRetainedValues, expired: Int) {
        let lapsed = entries.compactMap { name, entry in entry.expires.map { $0 <= now } == true ? name : nil }
        for name in lapsed { _ = removeValue(of: name) }
        let limit = max(0, limit)
        var first: [(name: String, entry: Entry)] = []
        first.reserveCapacity(min(entries.count, 2 * limit) + 1)
        for (name, entry) in entries {
            first.append((name.rawValue, entry))
            if first.count > 2 * limit {
                first.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
                first.removeSubrange(limit...)
            }
        }
        first.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        let listed = first.prefix(limit).map { name, entry in
            BrokerRetainedValues.Value(
                name: name, bytes: entry.frame.count,
                expiresInSeconds: entry.expires.map { Double($0 &- now) / 1e9 })
        }
        return (BrokerRetainedValues(count: count, bytes: bytes, values: listed, truncated: count > listed.count), lapsed.count)
    }
}
