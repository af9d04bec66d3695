/// The payload of `_nbus.eos.<publisher>`: repeated `nameLength` u8, name, last sequence u64 BE.
package enum EndOfStream {
    /// The largest payload of one record (NBP-1 §15): a publisher with more names sends several
    /// records, the last with `final: 1`. A broker keeps for replay only records within it.
    package static let maximumPayloadSize = 65_536

    /// Splits the table into payloads of at most 64 KiB, well under any receiver's maximum.
    package static func payloads(for sequences: [NotificationName: UInt64]) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        var current: [UInt8] = []
        for (name, last) in sequences.sorted(by: { $0.key < $1.key }) {
            let nameBytes = Array(name.rawValue.utf8)
            if current.count + 1 + nameBytes.count + 8 > maximumPayloadSize {
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
