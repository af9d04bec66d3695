import Synchronization

/// The subscriptions a broker's backend holds, as the subscription messages it forwards tell them.
///
/// libzmq's XPUB passes a topic up once, when its first subscriber subscribes, and its removal
/// once, when the last one leaves; so this is the set of topics at least one subscriber holds,
/// not a count per subscriber. NotificationBus subscribers announce themselves with a presence
/// topic per pattern (`\0nbus.presence.<bus id>.<pattern>`, NBP-1 §15), distinct per bus, which
/// is how they can be counted (`BrokerSubscriptions`). Updated on the forwarding thread for each
/// subscription message (never for a notification); bounded at `capacity` topics, past which new
/// ones are counted, not kept.
final class BrokerSubscriptionTable: Sendable {
    /// The most topics kept.
    static let capacity = 65_536

    private struct State {
        var topics: Set<[UInt8]> = []
        var untracked: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Applies one subscription message: byte 1 subscribes the rest, byte 0 unsubscribes it.
    func apply(_ message: UnsafeRawBufferPointer) {
        guard let kind = message.first, kind <= 1 else { return }
        let topic = Array(message.dropFirst())
        state.withLock { state in
            if kind == 1 {
                if state.topics.count < Self.capacity || state.topics.contains(topic) {
                    state.topics.insert(topic)
                } else {
                    state.untracked &+= 1
                }
            } else {
                state.topics.remove(topic)
            }
        }
    }

    /// The topics held now, and how many were not kept for want of room.
    func snapshot() -> BrokerSubscriptions {
        state.withLock { BrokerSubscriptions(topics: $0.topics.sorted { $0.lexicographicallyPrecedes($1) }, untracked: $0.untracked) }
    }
}

/// The subscriptions a broker's subscribers hold, read from what they sent it.
public struct BrokerSubscriptions: Hashable, Sendable {
    /// Every topic (ZeroMQ subscription prefix) at least one subscriber holds, in byte order.
    public var topics: [[UInt8]]
    /// Topics not kept because the table was full (`BrokerSubscriptionTable.capacity`).
    public var untracked: UInt64

    /// A pattern NotificationBus subscribers announced, with the buses that did.
    public struct AnnouncedPattern: Hashable, Sendable {
        /// The pattern (`orders.*.eu`).
        public var pattern: String
        /// The ids (16 hex digits) of the buses that announced it and whose data prefix is held.
        public var busIDs: [String]
    }

    /// A data prefix, and whether announced patterns explain it.
    public struct DataPrefix: Hashable, Sendable {
        /// The prefix as text (invalid UTF-8 repaired).
        public var prefix: String
        /// Whether a NotificationBus subscriber announced a pattern with this prefix; when not,
        /// the subscribers behind it are foreign (counted as at least one).
        public var announced: Bool
    }

    /// The topics as text.
    public init(topics: [[UInt8]], untracked: UInt64) {
        self.topics = topics
        self.untracked = untracked
    }

    private static let presencePrefix = Array("\u{0}nbus.presence.".utf8)

    /// Data prefixes (neither control topics nor readiness tokens), in byte order.
    public var dataPrefixes: [DataPrefix] {
        // Announced patterns were validated when read (below): the `try?` drops nothing.
        let announcedPrefixes = Set(announcedPatterns.compactMap { try? NamePattern($0.pattern).subscriptionPrefix })
        return topics.filter { topic in
            topic.first != 0 && !topic.starts(with: ControlNames.reservedPrefix)
        }.map { DataPrefix(prefix: String(decoding: $0, as: UTF8.self), announced: announcedPrefixes.contains($0)) }
    }

    /// The patterns NotificationBus subscribers announced, counted as NBP-1 §15 allows: one per
    /// bus id, and only while a data prefix covering the pattern is held.
    public var announcedPatterns: [AnnouncedPattern] {
        let dataTopics = topics.filter { $0.first != 0 }
        var byPattern: [String: [String]] = [:]
        for topic in topics where topic.starts(with: Self.presencePrefix) {
            let rest = topic.dropFirst(Self.presencePrefix.count)
            guard rest.count > 17, rest[rest.startIndex + 16] == UInt8(ascii: ".") else { continue }
            let busID = String(decoding: rest.prefix(16), as: UTF8.self)
            let patternText = String(decoding: rest.dropFirst(17), as: UTF8.self)
            // A peer's announcement that is no valid pattern is not counted (NBP-1 §15): skipped.
            guard let pattern = try? NamePattern(patternText),
                dataTopics.contains(where: { pattern.subscriptionPrefix.starts(with: $0) })
            else { continue }
            byPattern[patternText, default: []].append(busID)
        }
        return byPattern.sorted { $0.key < $1.key }.map { AnnouncedPattern(pattern: $0.key, busIDs: $0.value.sorted()) }
    }
}
