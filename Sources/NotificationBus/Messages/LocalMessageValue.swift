/// A typed post's value on its way to this bus's own subscriptions, in this process (issue 42,
/// item 4): the subscriptions of a looped-back bus get the value itself, not its JSON. It rides
/// beside the post's frame (`Mailbox.localValues`, `PendingPosts`) and on the routed
/// notification (`BusNotification.localValue`), never on the wire.
@usableFromInline
class LocalMessageValue: @unchecked Sendable {  // immutable: `core`, and `LocalMessage.value`
    /// Counts the JSON made here (`BusStats.messagesEncoded`).
    let core: BusCore
    /// The value's own type (`LocalValue<T>`'s `T`), compared by `take(_:as:)` in the consumer's
    /// specialized code: no virtual call, no closure and no generic metadata look-up per message.
    @usableFromInline let valueType: ObjectIdentifier

    @usableFromInline
    init(core: BusCore, valueType: ObjectIdentifier) {
        self.core = core
        self.valueType = valueType
    }

    /// `localValue`'s value when it is a `T` posted by this bus in this process (nil otherwise:
    /// no local value, or one of another type, which is then decoded from its JSON). Inlinable:
    /// specialized for `T` in the consumer's module, it is a class check, a compare and a load.
    @inlinable
    static func take<T: Sendable>(_ localValue: (any AnyObject & Sendable)?, as type: T.Type) -> T? {
        guard let local = localValue as? LocalMessageValue, local.valueType == ObjectIdentifier(T.self) else { return nil }
        return unsafeDowncast(local, to: LocalValue<T>.self).value
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

/// The value of a local post, held as its own type `T` (unconstrained, so the typed sequences,
/// generic over any `Sendable` element, can name it in `LocalMessageValue.take(_:as:)`).
@usableFromInline
class LocalValue<T: Sendable>: LocalMessageValue, @unchecked Sendable {  // immutable
    @usableFromInline let value: T

    @usableFromInline
    init(_ value: T, core: BusCore) {
        self.value = value
        super.init(core: core, valueType: ObjectIdentifier(T.self))
    }
}

/// `LocalMessageValue` for one message type: the value held as its own type, so a post costs no
/// existential box and a typed subscription of that type takes it back by comparing types.
@usableFromInline
final class LocalMessage<M: BusMessage>: LocalValue<M>, @unchecked Sendable {
    @usableFromInline
    override init(_ value: M, core: BusCore) {
        super.init(value, core: core)
    }

    override var message: any BusMessage { value }

    override func encode() throws -> [UInt8] { try M.encodeBusPayload(value) }

    override func value<T: BusMessage>(as type: T.Type) -> T? {
        T.self == M.self ? BusJSONCast.cast(value, to: T.self) : nil
    }
}
