import FoundationEssentials

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
