/// A typed post's value on its way to this bus's own subscriptions, in this process (issue 42,
/// item 4): the subscriptions of a looped-back bus get the value itself, not its JSON. It rides
/// beside the post's frame (`Mailbox.localValues`, `PendingPosts`) and on the routed
/// notification (`BusNotification.localValue`), never on the wire.
@usableFromInline
class LocalMessageValue: @unchecked Sendable {  // immutable: `core`, and `LocalMessage.value`
    /// Counts the JSON made here (`BusStats.messagesEncoded`).
    let core: BusCore

    @usableFromInline
    init(core: BusCore) {
        self.core = core
    }

    /// The message as posted, boxed (a family's subscription asks; a single type uses `value(as:)`).
    var message: any BusMessage { fatalError("LocalMessageValue is abstract") }

    /// Its JSON, for a byte subscription of this process that reads a post made without it.
    func encode() throws -> [UInt8] { fatalError("LocalMessageValue is abstract") }

    /// The value as `M`, when it is one (another type may share the name).
    func value<T: BusMessage>(as type: T.Type) -> T? { fatalError("LocalMessageValue is abstract") }

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

/// `LocalMessageValue` for one message type: the value held as its own type, so a post costs no
/// existential box and a typed subscription of that type takes it back by comparing types.
@usableFromInline
final class LocalMessage<M: BusMessage>: LocalMessageValue, @unchecked Sendable {
    let value: M

    @usableFromInline
    init(_ value: M, core: BusCore) {
        self.value = value
        super.init(core: core)
    }

    override var message: any BusMessage { value }

    override func encode() throws -> [UInt8] { try M.encodeBusPayload(value) }

    override func value<T: BusMessage>(as type: T.Type) -> T? {
        T.self == M.self ? BusJSONCast.cast(value, to: T.self) : nil
    }
}
