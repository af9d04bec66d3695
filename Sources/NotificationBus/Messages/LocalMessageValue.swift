/// A typed post's value on its way to this bus's own subscriptions, in this process (issue 42,
/// item 4): the subscriptions of a looped-back bus get the value itself, not its JSON. It rides
/// beside the post's frame (`Mailbox.localValues`, `PendingPosts`) and on the routed
/// notification (`BusNotification.localValue`), never on the wire.
final class LocalMessageValue: Sendable {
    /// The message as posted.
    let value: any BusMessage
    /// Counts the JSON made here (`BusStats.messagesEncoded`).
    let core: BusCore

    init(_ value: any BusMessage, core: BusCore) {
        self.value = value
        self.core = core
    }

    /// Its JSON, for a byte subscription of this process that reads a post made without it (no
    /// closure kept per post: the existential is opened here, when asked).
    func encode() throws -> [UInt8] { try value.localPayload() }

    /// The value as `M`, when it is one (another type may share the name).
    func value<M: BusMessage>(as type: M.Type) -> M? { value as? M }

    /// `notification`'s payload made from its local value when it travelled without one (no
    /// subscriber outside this process wanted it): what a byte subscription, or a typed one of
    /// another type, reads. Counted as an encoding. A value whose encoding throws leaves the
    /// payload empty: its type cannot go on the wire, and a reader of bytes sees it empty, as a
    /// typed reader of another type sees it undecodable.
    static func materialize(_ notification: inout BusNotification) {
        guard notification.payload.isEmpty, let local = notification.localValue as? LocalMessageValue else { return }
        do {
            notification.payload = try local.encode()
            local.core.noteMessageEncoded()
        } catch {
            return
        }
    }
}

extension BusMessage {
    /// `encodeBusPayload(self)`, callable on an existential (`LocalMessageValue.encode`).
    fileprivate func localPayload() throws -> [UInt8] { try Self.encodeBusPayload(self) }
}
