/// Request and reply in NBP/1 (NBP-1.md §16): a request is an ordinary notification with a
/// `reply-to` header naming where its one reply goes; the requester subscribes to that name
/// before it posts, and a responder posts the reply there. The reply-to name is unique per
/// request, so it is what names the request: nothing else correlates them.
public enum RequestReply {
    /// The header naming where the reply goes (a valid notification name).
    public static let replyToHeader = "reply-to"
    /// The reply's outcome: `ok` (the default when absent) or `error` (the payload then says why).
    public static let statusHeader = "status"
    /// `status` of a reply that answers the request.
    public static let ok = "ok"
    /// `status` of a reply saying the responder failed (its payload is the reason, UTF-8).
    public static let error = "error"
    /// The first token of reply names NotificationBus requesters make: `_inbox.<requester hex>.<n>`.
    public static let inboxToken = "_inbox"

    /// A reply name unique to one request of `requester` (its publisher id), `number` unique
    /// within it: `_inbox.<16 hex digits>.<number>`.
    public static func inboxName(requester: UInt64, number: UInt64) -> NotificationName {
        // 16 hex digits and a decimal number are valid tokens: the name is always valid.
        NotificationName(validatedText: "\(inboxToken).\(ControlNames.hex(requester)).\(number)")
    }

    /// Where `request`'s reply goes: its `reply-to` header as a name, or nil when it has none or
    /// the header is not a valid notification name (such a request cannot be answered).
    public static func replyName(of request: BusNotification) -> NotificationName? {
        guard let text = request.headers[replyToHeader] else { return nil }
        // A reply-to header that is not a valid name cannot be answered: nil is that answer,
        // and `Bus.reply(to:with:)` turns it into `.notARequest`.
        return try? NotificationName(text)
    }
}
