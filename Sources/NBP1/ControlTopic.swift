/// A subscription message's topic, read as the control traffic it may be (NBP-1 §15).
package enum ControlTopic: Equatable {
    /// `_nbus.ready.<bus>.<n>` and its NUL: a subscriber's readiness token (the name's bytes).
    case readyToken(ArraySlice<UInt8>)
    /// `\0nbus.presence.<bus hex>.<pattern>`: subscriber `bus` announces `pattern`.
    case presence(bus: UInt64, pattern: NamePattern)
    /// `\0nbus.eosack.<publisher hex>.<subscriber hex>`: `subscriber` processed `publisher`'s end of stream.
    case endOfStreamAcknowledgement(publisher: UInt64, subscriber: UInt64)
    /// A malformed presence or acknowledgement topic: ignored, like a subscription nobody sends to.
    case malformedControl
    /// A plain prefix: a data subscription (NotificationBus's or a foreign subscriber's).
    case data

    /// Classifies `topic` (the subscription message without its subscribe/unsubscribe byte).
    package init(_ topic: ArraySlice<UInt8>) {
        if topic.starts(with: ControlNames.readyPrefix), topic.last == 0 {
            self = .readyToken(topic.dropLast())
        } else if topic.starts(with: ControlNames.endOfStreamAcknowledgementPrefix) {
            let rest = topic.dropFirst(ControlNames.endOfStreamAcknowledgementPrefix.count)
            guard rest.count == 33, rest[rest.startIndex + 16] == UInt8(ascii: "."),
                let publisher = ControlNames.parseHex(rest.prefix(16)),
                let subscriber = ControlNames.parseHex(rest.suffix(16))
            else {
                self = .malformedControl
                return
            }
            self = .endOfStreamAcknowledgement(publisher: publisher, subscriber: subscriber)
        } else if topic.starts(with: ControlNames.presencePrefix) {
            let rest = topic.dropFirst(ControlNames.presencePrefix.count)
            // An invalid pattern (its error) makes the announcement malformed, counted as such.
            guard rest.count > 17, rest[rest.startIndex + 16] == UInt8(ascii: "."),
                let bus = ControlNames.parseHex(rest.prefix(16)),
                let pattern = try? NamePattern(String(decoding: rest.dropFirst(17), as: UTF8.self))
            else {
                self = .malformedControl
                return
            }
            self = .presence(bus: bus, pattern: pattern)
        } else {
            self = .data
        }
    }
}
