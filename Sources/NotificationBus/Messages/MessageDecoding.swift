import FoundationEssentials

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
@usableFromInline
struct MessageDecoding<Element: Sendable>: Sendable {
    let typeName: String
    let decode: @Sendable (BusNotification) throws(UndecodableMessage) -> Element
    /// The element for a value this bus posted itself, taken as it is (nil: not one of this
    /// type's, so the payload is decoded instead).
    let local: @Sendable (LocalMessageValue) -> Element?

    /// The payload must be JSON: content type `json`, or `unspecified` (a raw producer that did
    /// not say, like `nbus publish` without `--content-type`).
    /// `notification`'s message: this bus's own post's value as it is (issue 42: no JSON), else
    /// its JSON decoded (counted in `messagesDecoded`); what does not decode is counted in
    /// `storage`'s `undecodable` and thrown. `notification` gets its JSON made when it was a local
    /// post of another type under the same name.
    @usableFromInline
    func message(of notification: inout BusNotification, storage: SubscriptionStorage) throws(UndecodableMessage) -> Element {
        if let local = notification.localValue as? LocalMessageValue {
            if let message = self.local(local) { return message }
            // Another type under the same name: from its JSON, as from another process.
            LocalMessageValue.materialize(&notification)
        }
        do throws(UndecodableMessage) {
            let message = try decode(notification)
            storage.core.noteMessageDecoded()
            return message
        } catch {
            storage.noteUndecodable()
            throw error
        }
    }

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
        return MessageDecoding(typeName: typeName, decode: { notification throws(UndecodableMessage) in
            try MessageDecoding.checkContentType(notification, typeName)
            do {
                return try M.decodeBusPayload(notification.payload)
            } catch {
                throw UndecodableMessage(type: typeName, reason: String(describing: error))
            }
        }, local: { $0.value(as: M.self) })
    }

}

extension MessageDecoding where Element: BusMessageFamily {
    /// A family: the member whose name the notification carries.
    static func family() -> MessageDecoding<Element> {
        typealias F = Element
        let typeName = String(describing: F.self)
        let members = F.members.map { (type: $0, name: $0.busName, subject: $0.hasBusSubject) }
        let memberTypes = F.members.map { ObjectIdentifier($0) }
        return MessageDecoding(typeName: typeName, decode: { notification throws(UndecodableMessage) in
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
        }, local: { local in
            let value = local.message
            return memberTypes.contains(ObjectIdentifier(type(of: value))) ? F(member: value) : nil
        })
    }
}
