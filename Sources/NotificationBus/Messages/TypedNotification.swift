/// A decoded message with the notification that carried it: its name, publisher, sequence,
/// publish time and headers (`Bus.messageEnvelopes(of:)`).
public struct TypedNotification<Message: Sendable>: Sendable {
    /// The decoded value.
    public var message: Message
    /// The notification as it arrived (its payload is the message's JSON).
    public var notification: BusNotification

    public init(message: Message, notification: BusNotification) {
        self.message = message
        self.notification = notification
    }

    /// The name it was posted under (`<busName>.<subject id>` for a message with a subject).
    public var name: NotificationName { notification.name }
    /// The publisher's id.
    public var publisherID: UInt64 { notification.publisherID }
    /// Its sequence number per (publisher, name).
    public var sequence: UInt64 { notification.sequence }
    /// Publish time in nanoseconds since the Unix epoch (UTC).
    public var timestamp: UInt64 { notification.timestamp }
    /// The headers posted with it.
    public var headers: NotificationHeaders { notification.headers }
    /// Whether it is a kept current value handed to a subscription as it started (a type that
    /// declares itself retained, `BusMessage.busRetained`), rather than a change posted now.
    public var isRetained: Bool { notification.isRetained }
}

extension TypedNotification: Equatable where Message: Equatable {}
extension TypedNotification: Hashable where Message: Hashable {}

/// One element of `Bus.messageEvents(of:)`: a message, a gap where notifications were lost, a
/// notification that did not decode (counted in `SubscriptionStats.undecodable` too), or the
/// clear of a retained value.
public enum MessageEvent<Message: Sendable>: Sendable {
    /// A decoded message and its notification.
    case message(TypedNotification<Message>)
    /// Notifications lost at this point of the stream (as `BusEvent.gap`).
    case gap(Gap)
    /// A notification whose payload is not a `Message`: malformed or mistyped JSON, another
    /// content type, or (for a family) a name no member has.
    case undecodable(BusNotification, UndecodableMessage)
    /// A retained post with an empty payload (`Bus.clearRetained(name:)`, NBP-1 §18): the name's
    /// kept value was removed, so it has no current message from now on. Not a message and not
    /// undecodable (not counted in `SubscriptionStats.undecodable`); `messages(of:)`,
    /// `messageEnvelopes(of:)` and the typed observers skip it.
    case cleared(BusNotification)
}

extension MessageEvent: Equatable where Message: Equatable {}
extension MessageEvent: Hashable where Message: Hashable {}
