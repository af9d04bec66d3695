import FoundationEssentials

/// A message type the bus carries: a `Codable` value with an explicit bus name.
///
/// Adopt it through `BusAsyncMessage` or `BusMainActorMessage`, which refine Foundation's own
/// `NotificationCenter.AsyncMessage` and `NotificationCenter.MainActorMessage`: one type can be
/// posted to `NotificationCenter.default` and to the bus, and one `BaseMessageIdentifier` serves
/// both (docs/architecture.md, "Typed messages", says why they refine rather than stand beside).
///
/// The name is explicit, never derived from the type's Swift name (which a rename would change
/// under every other process and language): `static let busName: NotificationName =
/// "orders.created"` is checked like any name literal, trapping where it is evaluated when invalid.
/// On the wire the payload is the value as JSON (content type `json`), nothing else: a producer in
/// any language posts the same JSON under the same name (docs/typed-messages.md).
public protocol BusMessage: Codable, Sendable {
    /// The name this type is posted under (with `.<subject id>` appended when its `Subject` is a
    /// `BusSubject` and a subject is given).
    static var busName: NotificationName { get }

    /// The payload for `message`: JSON by default (`BusJSON.encode`, keys in the order the value
    /// encodes them). Implement it to choose another coding (`JSONEncoder` with a date strategy,
    /// say); keep the content type JSON.
    static func encodeBusPayload(_ message: Self) throws -> [UInt8]

    /// The value in `payload`: `BusJSON.decode` by default, which reads what Foundation's
    /// `JSONEncoder` and any RFC 8259 producer write. Whatever it throws counts the notification
    /// as undecodable (`SubscriptionStats.undecodable`), never crashes nor drops it silently.
    static func decodeBusPayload(_ payload: [UInt8]) throws -> Self

    /// Whether this type's messages are state, each the current value of its name (NBP-1 §18):
    /// `false` by default. A type that says `static let busRetained = true` is posted retained
    /// (`post(_:)`, `post(_:subject:)`, `postNow(_:)`: brokers that keep retained values keep the
    /// last one per name), and its typed subscriptions and observers (`messages(of:)`,
    /// `messageEvents(of:)`, `addObserver(for:)`...) start with the current value of each name
    /// they match, marked retained (`TypedNotification.isRetained`), before the live ones;
    /// `ready(type.busObservedPattern)` returns once those were handed over.
    static var busRetained: Bool { get }

    /// How long a retained post of this type is kept (its `retain-for`, NBP-1 §18): nil by
    /// default, until replaced, cleared or evicted. Only read when `busRetained` is true.
    static var busRetainFor: Duration? { get }
}

extension BusMessage {
    public static func encodeBusPayload(_ message: Self) throws -> [UInt8] {
        // BusJSON writes the value's keys in the order it encodes them (the declaration order
        // for a synthesized conformance): the same value makes the same bytes in every run.
        try BusJSON.encode(message)
    }

    public static func decodeBusPayload(_ payload: [UInt8]) throws -> Self {
        try BusJSON.decode(Self.self, from: payload)
    }

    public static var busRetained: Bool { false }

    public static var busRetainFor: Duration? { nil }
}

extension BusMessage {
    /// What observing this type without a subject subscribes: `busName`, or `busName.*` when its
    /// `Subject` is a `BusSubject` (what BusViews' typed modifiers subscribe).
    public static var busObservedPattern: NamePattern {
        hasBusSubject ? ((try? NamePattern(busName.rawValue + ".*")) ?? NamePattern(exactly: busName)) : NamePattern(exactly: busName)
    }

    /// Whether this type's names carry a subject segment.
    @usableFromInline
    static var hasBusSubject: Bool { Subjects.isBusSubject(Self.self) }
}
