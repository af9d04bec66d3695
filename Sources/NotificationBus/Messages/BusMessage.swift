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

    /// The payload for `message`: JSON by default (`JSONEncoder` with sorted keys). Implement it to
    /// choose another encoder configuration (a date strategy, say); keep the content type JSON.
    static func encodeBusPayload(_ message: Self) throws -> [UInt8]

    /// The value in `payload`: `JSONDecoder()` by default. Whatever it throws counts the
    /// notification as undecodable (`SubscriptionStats.undecodable`), never crashes nor drops it silently.
    static func decodeBusPayload(_ payload: [UInt8]) throws -> Self
}

extension BusMessage {
    public static func encodeBusPayload(_ message: Self) throws -> [UInt8] {
        // Sorted keys: the same value makes the same bytes in every run (JSONEncoder's own
        // order follows a hash, seeded per process), so the wire is reproducible and testable.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(message))
    }

    public static func decodeBusPayload(_ payload: [UInt8]) throws -> Self {
        try JSONDecoder().decode(Self.self, from: Data(payload))
    }
}

/// A message observers take asynchronously, on an isolation of their choosing, or as an
/// `AsyncSequence` (`Bus.messages(of:)`): the task style. Also a Foundation `AsyncMessage`.
public protocol BusAsyncMessage: NotificationCenter.AsyncMessage, BusMessage {
    /// What the message is about; by default none (`BusNoSubject`). A `BusSubject` makes the
    /// subject's id the last token of the name.
    associatedtype Subject = BusNoSubject
}

/// A message whose observers run on the main actor (`Bus.addObserver(for:using:)` with a
/// `@MainActor` closure): the onReceive style. Also a Foundation `MainActorMessage`. `Sendable`
/// (Foundation's is not required to be) because the value crosses from the bus's thread, or
/// from a poster on another isolation, to the main actor.
public protocol BusMainActorMessage: NotificationCenter.MainActorMessage, BusMessage {
    /// What the message is about; by default none (`BusNoSubject`).
    associatedtype Subject = BusNoSubject
}

/// The default `Subject` of a bus message type: none. A class (never instantiated) so that
/// Foundation's `addObserver(of: nil, for:)`, which wants an object subject, takes the type too.
public final class BusNoSubject: Sendable {
    private init() {}
}

/// What stands for a message's subject across processes, where no object is shared: an identity,
/// one name token, which becomes the last segment of the name.
///
/// When a message type's `Subject` is a `BusSubject`, `post(_:subject:)` posts under
/// `<busName>.<busSubjectID>`, `addObserver(of: subject, for:)` subscribes exactly that name, and
/// observing without a subject subscribes `<busName>.*`; the publisher filters the rest away, as
/// for any pattern, before encoding anything.
public protocol BusSubject {
    /// One valid name token: no dot, no space or control byte, no `*` or `>` (`"A-1042"`).
    var busSubjectID: String { get }
}

/// A family of message types under one pattern (every `OrderEvent` under `orders.>`), observed
/// as one subscription: each notification is decoded as the member whose name it carries.
///
/// ```
/// enum OrderEvent: BusMessageFamily {
///     case created(OrderCreated), shipped(OrderShipped)
///     static let busPattern: NamePattern = "orders.>"
///     static let members: [any BusMessage.Type] = [OrderCreated.self, OrderShipped.self]
///     init?(member: any BusMessage) { ... }
/// }
/// ```
///
/// A notification under the pattern whose name no member has (or that a member cannot decode)
/// is counted undecodable, as for a single type.
public protocol BusMessageFamily: Sendable {
    /// What the family's subscription selects.
    static var busPattern: NamePattern { get }
    /// The member types; a notification goes to the one whose `busName` is its name (or its name
    /// without the last token, for a member whose `Subject` is a `BusSubject`).
    static var members: [any BusMessage.Type] { get }
    /// Wraps a decoded member; nil when the value is not one (counted undecodable).
    init?(member: any BusMessage)
}

// MARK: Names and decoding

extension BusMessage {
    /// What observing this type without a subject subscribes: `busName`, or `busName.*` when its
    /// `Subject` is a `BusSubject` (what BusViews' typed modifiers subscribe).
    public static var busObservedPattern: NamePattern {
        hasBusSubject ? ((try? NamePattern(busName.rawValue + ".*")) ?? NamePattern(exactly: busName)) : NamePattern(exactly: busName)
    }

    /// Whether this type's names carry a subject segment.
    static var hasBusSubject: Bool { Subjects.isBusSubject(Self.self) }
}

/// Subject rules in one place: what type has one, what name a subject makes.
enum Subjects {
    /// Whether `M.Subject` is a `BusSubject` (read through Foundation's associated type when the
    /// message is one of Foundation's kinds; a bare `BusMessage` has no subject).
    static func isBusSubject<M: BusMessage>(_ type: M.Type) -> Bool {
        if let async = type as? any NotificationCenter.AsyncMessage.Type { return subjectIsBusSubject(async) }
        if let main = type as? any NotificationCenter.MainActorMessage.Type { return subjectIsBusSubject(main) }
        return false
    }

    private static func subjectIsBusSubject<M: NotificationCenter.AsyncMessage>(_: M.Type) -> Bool {
        M.Subject.self is any BusSubject.Type
    }

    private static func subjectIsBusSubject<M: NotificationCenter.MainActorMessage>(_: M.Type) -> Bool {
        M.Subject.self is any BusSubject.Type
    }

    /// `<busName>.<id>`, or `.invalidName` when `id` is not exactly one valid token.
    static func name(_ base: NotificationName, subjectID id: String) throws(BusError) -> NotificationName {
        // One token: a dot would let a subject reach into another subject's names.
        if id.utf8.contains(NameGrammar.dot) { throw .invalidSubject(id: id, reason: "it holds a dot") }
        do {
            _ = try NotificationName(id)
        } catch {
            throw .invalidSubject(id: id, reason: error.description)
        }
        do { return try NotificationName(base.rawValue + "." + id) } catch { throw .invalidName(error) }
    }

    /// What observing `M` with an optional subject subscribes.
    static func pattern<M: BusMessage>(_ type: M.Type, subjectID: String?) throws(BusError) -> NamePattern {
        if let subjectID { return NamePattern(exactly: try name(M.busName, subjectID: subjectID)) }
        guard M.hasBusSubject else { return NamePattern(exactly: M.busName) }
        do { return try NamePattern(M.busName.rawValue + ".*") } catch { throw .invalidName(error) }
    }
}

/// Why a delivered notification did not become a message value.
public struct UndecodableMessage: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Swift type it was to decode as.
    public var type: String
    /// What failed: the decoder's error, a content type that is not JSON, or a name no member of
    /// a family has.
    public var reason: String

    public init(type: String, reason: String) {
        self.type = type
        self.reason = reason
    }

    public var description: String { "not a \(type): \(reason)" }
}

/// Turns a delivered notification into an element: one message type, or a family.
struct MessageDecoding<Element: Sendable>: Sendable {
    let typeName: String
    let decode: @Sendable (BusNotification) throws(UndecodableMessage) -> Element

    /// The payload must be JSON: content type `json`, or `unspecified` (a raw producer that did
    /// not say, like `nbus publish` without `--content-type`).
    static func checkContentType(_ notification: BusNotification, _ typeName: String) throws(UndecodableMessage) {
        guard notification.contentType == .json || notification.contentType == .unspecified else {
            throw UndecodableMessage(type: typeName, reason: "content type \(notification.contentType.name), not json")
        }
    }

}

extension MessageDecoding where Element: BusMessage {
    /// One message type.
    static func single() -> MessageDecoding<Element> {
        typealias M = Element
        let typeName = String(describing: M.self)
        return MessageDecoding(typeName: typeName) { notification throws(UndecodableMessage) in
            try MessageDecoding.checkContentType(notification, typeName)
            do {
                return try M.decodeBusPayload(notification.payload)
            } catch {
                throw UndecodableMessage(type: typeName, reason: String(describing: error))
            }
        }
    }

}

extension MessageDecoding where Element: BusMessageFamily {
    /// A family: the member whose name the notification carries.
    static func family() -> MessageDecoding<Element> {
        typealias F = Element
        let typeName = String(describing: F.self)
        let members = F.members.map { (type: $0, name: $0.busName, subject: $0.hasBusSubject) }
        return MessageDecoding(typeName: typeName) { notification throws(UndecodableMessage) in
            try MessageDecoding.checkContentType(notification, typeName)
            let name = notification.name.rawValue
            let member = members.first { member in
                if member.subject {
                    let base = member.name.rawValue + "."
                    return name.hasPrefix(base) && !name.dropFirst(base.count).contains(".")
                }
                return member.name.rawValue == name
            }
            guard let member else {
                throw UndecodableMessage(type: typeName, reason: "no member type is named \(name)")
            }
            let value: any BusMessage
            do {
                value = try member.type.decodeBusPayload(notification.payload)
            } catch {
                throw UndecodableMessage(type: typeName, reason: "as \(member.type): \(error)")
            }
            guard let wrapped = F(member: value) else {
                throw UndecodableMessage(type: typeName, reason: "init(member:) refused a \(member.type)")
            }
            return wrapped
        }
    }
}
