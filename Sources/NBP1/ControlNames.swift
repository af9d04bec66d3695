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

/// The payload of `_nbus.eos.<publisher>`: repeated `nameLength` u8, name, last sequence u64 BE.
package enum EndOfStream {
    /// Splits the table into payloads of at most 64 KiB, well under any receiver's maximum.
    package static func payloads(for sequences: [NotificationName: UInt64]) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        var current: [UInt8] = []
        for (name, last) in sequences.sorted(by: { $0.key < $1.key }) {
            let nameBytes = Array(name.rawValue.utf8)
            if current.count + 1 + nameBytes.count + 8 > 65_536 {
                payloads.append(current)
                current = []
            }
            current.append(UInt8(nameBytes.count))
            current += nameBytes
            withUnsafeBytes(of: last.bigEndian) { current += $0 }
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    /// Parses a payload; stops at the first malformed entry (NBP-1 §15.1: the entries before it
    /// apply, the rest is ignored).
    package static func entries(in payload: [UInt8]) -> [(NotificationName, UInt64)] {
        parse(payload).entries
    }

    /// Parses a payload: its entries up to the first malformed one, and whether one was (an entry
    /// cut short, an empty name, a name NBP/1 refuses).
    package static func parse(_ payload: [UInt8]) -> (entries: [(NotificationName, UInt64)], malformed: Bool) {
        var result: [(NotificationName, UInt64)] = []
        var position = 0
        while position < payload.count {
            let length = Int(payload[position])
            let nameEnd = position + 1 + length
            // A name that is not one (its error) makes the record malformed: `true` below says so.
            guard length > 0, nameEnd + 8 <= payload.count,
                let name = try? NotificationName(String(decoding: payload[(position + 1)..<nameEnd], as: UTF8.self)),
                name.rawValue.utf8.elementsEqual(payload[(position + 1)..<nameEnd])
            else { return (result, true) }
            var last: UInt64 = 0
            for byte in payload[nameEnd..<(nameEnd + 8)] { last = last << 8 | UInt64(byte) }
            result.append((name, last))
            position = nameEnd + 8
        }
        return (result, false)
    }
}


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

extension ControlNames {
    /// 16 hex digits as written by `hex(_:)`; nil for anything else.
    package static func parseHex(_ digits: some Collection<UInt8>) -> UInt64? {
        guard digits.count == 16 else { return nil }
        return UInt64(String(decoding: digits, as: UTF8.self), radix: 16)
    }
}
