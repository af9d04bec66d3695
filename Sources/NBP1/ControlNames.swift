// NBP/1's control traffic: the reserved names and subscription topics NotificationBus uses to talk to
// itself (NBP-1.md §15), and the end-of-stream record's payload. Pure functions over bytes.

/// Reserved names and subscription prefixes the bus uses to talk to itself (see NBP-1.md, "Reserved").
package enum ControlNames {
    /// `_nbus.ready.<bus id hex>.<n>`: a subscriber's readiness token, echoed by publishers.
    package static let readyPrefix = Array("_nbus.ready.".utf8)
    /// `\0nbus.presence.<bus id hex>.<pattern>`: a subscriber announcing a pattern to publishers.
    /// Starts with NUL, so it can never match a notification (names are never empty).
    package static let presencePrefix = Array("\u{0}nbus.presence.".utf8)

    /// `_nbus.eos.<publisher id hex>`: a closing publisher's last sequence number per name, so
    /// subscribers can count a lost tail (which no later message would reveal as a gap).
    package static let endOfStreamPrefix = Array("_nbus.eos.".utf8)
    /// Every name starting with this is the bus's own; `post` refuses it (and the bare `_nbus`).
    package static let reservedPrefix = Array("_nbus.".utf8)
    /// The reserved first token (NBP-1 §15): `_nbus` itself and every name under it.
    package static let reservedToken = Array("_nbus".utf8)

    /// Whether `name` is the bus's own (its first token is `_nbus`); checked on every post, so a
    /// name not starting with `_` (nearly all) costs one byte's look.
    package static func isReserved(_ name: NotificationName) -> Bool {
        let bytes = name.rawValue.utf8
        return bytes.first == UInt8(ascii: "_") && isReserved(nameBytes: Array(bytes))
    }

    /// `isReserved` on a name's bytes: `_nbus`, or `_nbus.` followed by anything.
    package static func isReserved<Bytes: Collection<UInt8>>(nameBytes: Bytes) -> Bool {
        guard nameBytes.starts(with: reservedToken) else { return false }
        let rest = nameBytes.dropFirst(reservedToken.count)
        return rest.isEmpty || rest.first == UInt8(ascii: ".")
    }

    /// `_nbus.ready.<bus hex>.<token>`: the name of a subscriber's readiness token.
    package static func readyName(bus: UInt64, token: UInt64) -> String {
        String(decoding: readyPrefix, as: UTF8.self) + hex(bus) + "." + String(token)
    }

    /// `_nbus.eos.<publisher hex>`: the name of `publisher`'s end-of-stream record.
    package static func endOfStreamName(publisher: UInt64) -> String {
        String(decoding: endOfStreamPrefix, as: UTF8.self) + hex(publisher)
    }

    /// An id as the bus writes ids everywhere (control names, `nbus` output, NBP-1 §15): 16
    /// lowercase hex digits, zero-padded, so ids compare and sort as text. The one hex formatter.
    package static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// `\0nbus.eosack.<publisher hex>.<subscriber hex>`: a subscriber has processed a publisher's end of stream.
    package static let endOfStreamAcknowledgementPrefix = Array("\u{0}nbus.eosack.".utf8)

    package static func endOfStreamAcknowledgement(publisher: UInt64, subscriber: UInt64) -> [UInt8] {
        endOfStreamAcknowledgementPrefix + Array("\(hex(publisher)).\(hex(subscriber))".utf8)
    }

    package static func presenceTopic(bus: UInt64, pattern: NamePattern) -> [UInt8] {
        presencePrefix + Array("\(hex(bus)).\(pattern.rawValue)".utf8)
    }
}

extension ControlNames {
    /// 16 hex digits as written by `hex(_:)`; nil for anything else.
    package static func parseHex(_ digits: some Collection<UInt8>) -> UInt64? {
        guard digits.count == 16 else { return nil }
        return UInt64(String(decoding: digits, as: UTF8.self), radix: 16)
    }
}
