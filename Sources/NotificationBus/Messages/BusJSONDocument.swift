import FoundationEssentials

/// A JSON text checked against RFC 8259 in one pass and indexed: one entry per value, in document
/// order (an object's members as key, value, key, value...), each saying where its bytes are and
/// where the next sibling's entry starts. `BusJSONDecoder` reads values from the entries.
final class BusJSONDocument {
    enum Kind: UInt8, CustomStringConvertible {
        case null, `true`, `false`, number, string, object, array

        var description: String {
            switch self {
            case .null: "null"
            case .true, .false: "a boolean"
            case .number: "a number"
            case .string: "a string"
            case .object: "an object"
            case .array: "an array"
            }
        }
    }

    /// 24 bytes (offsets as `UInt32`: a document is at most 4 GiB), so a small message's
    /// entries take a few cache lines.
    struct Entry {
        var kind: Kind
        /// A string's content has an escape (read through `unescape`). For an object: two of
        /// its keys may be the same name (`mayRepeatKeys`).
        var escaped: Bool
        private var start32: UInt32
        private var end32: UInt32
        private var next32: UInt32
        private var count32: UInt32
        /// For an object: the entry of the member key a look-up tries first (`cursor`).
        private var cursor32: UInt32 = 0

        init(kind: Kind, escaped: Bool = false, start: Int, end: Int, next: Int = 0, count: Int = 0) {
            self.kind = kind
            self.escaped = escaped
            start32 = UInt32(truncatingIfNeeded: start)
            end32 = UInt32(truncatingIfNeeded: end)
            next32 = UInt32(truncatingIfNeeded: next)
            count32 = UInt32(truncatingIfNeeded: count)
        }

        /// Byte range: a string's content without its quotes, a number's text, a container's brackets.
        var start: Int { Int(start32) }
        var end: Int {
            get { Int(end32) }
            set { end32 = UInt32(truncatingIfNeeded: newValue) }
        }
        /// The entry after this value and everything in it.
        var next: Int {
            get { Int(next32) }
            set { next32 = UInt32(truncatingIfNeeded: newValue) }
        }
        /// An object's members, an array's elements.
        var count: Int {
            get { Int(count32) }
            set { count32 = UInt32(truncatingIfNeeded: newValue) }
        }
        /// For an object: whether two of its keys may name the same member (the parse's cheap
        /// sieve said so, or a key has an escape). When not, a key found is the only member of
        /// that name, so a look-up may take the member it tries first without scanning.
        var mayRepeatKeys: Bool {
            get { escaped }
            set { escaped = newValue }
        }
        /// For an object: the entry of the member key a look-up tries first, the one after the
        /// member found last (the keys of a synthesized `Decodable` come in declaration order,
        /// BusJSON writes them in that order, so it is usually the one wanted); 0: none yet,
        /// the first member.
        var cursor: Int {
            get { Int(cursor32) }
            set { cursor32 = UInt32(truncatingIfNeeded: newValue) }
        }
    }

    /// The largest text a document reads (its offsets are `UInt32`).
    static let maximumLength = Int(UInt32.max - 1)

    let bytes: [UInt8]
    /// The entries, in a buffer this document owns: the parse appends without an array's
    /// uniqueness check per value, and a read has no bounds check (every index read is one the
    /// parse made, below `count`). `Entry` is trivial: nothing to deinitialize.
    private let entries: UnsafeMutablePointer<Entry>
    /// How many entries the document has.
    let count: Int

    init(_ bytes: [UInt8]) throws(DecodingError) {
        let (entries, count) = try bytes.withUnsafeBufferPointer { (buffer) throws(DecodingError) in
            guard buffer.count <= Self.maximumLength else {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: [], debugDescription: "The given data was not valid JSON: longer than \(Self.maximumLength) bytes."))
            }
            var parser = Parser(bytes: buffer)
            do throws(DecodingError) {
                parser.skipWhitespace()
                try parser.value(depth: 0)
                parser.skipWhitespace()
                guard parser.position == buffer.count else {
                    throw parser.error(buffer.isEmpty ? "The given data was empty." : "Unexpected text after the JSON value")
                }
            } catch {
                parser.entries.deallocate()
                throw error
            }
            return (parser.entries, parser.count)
        }
        self.bytes = bytes
        self.entries = entries
        self.count = count
    }

    deinit {
        entries.deallocate()
    }

    subscript(index: Int) -> Entry {
        assert(index >= 0 && index < count)
        return entries[index]
    }

    /// Sets object `index`'s look-up cursor (the entries are this document's own buffer: no
    /// exclusivity check, and a document is read by one decode on one task).
    func setCursor(_ cursor: Int, of index: Int) {
        assert(index >= 0 && index < count && entries[index].kind == .object)
        entries[index].cursor = cursor
    }

    /// A string entry's content (escapes resolved; the bytes were checked to be UTF-8).
    func string(_ entry: Entry) -> String {
        if !entry.escaped {
            return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[entry.start..<entry.end]), as: UTF8.self) }
        }
        return String(decoding: unescape(entry), as: UTF8.self)
    }

    /// A string entry's content as UTF-8, escapes resolved.
    func unescape(_ entry: Entry) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(entry.end - entry.start)
        var index = entry.start
        while index < entry.end {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                index += 1
                continue
            }
            let escape = bytes[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = Self.hex4(bytes, index)
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {  // checked: a low surrogate escape follows
                    let low = Self.hex4(bytes, index + 2)
                    index += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                Self.appendUTF8(scalar, to: &out)
            default: out.append(escape)  // " \ /
            }
        }
        return out
    }

    static func hex4(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        var value: UInt32 = 0
        for byte in bytes[at..<at + 4] { value = value << 4 | UInt32(hexValue(byte) ?? 0) }
        return value
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case ..<0x80:
            out.append(UInt8(scalar))
        case ..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6))
            out.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18))
            out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// The checking pass.
    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0
        /// The entries so far (the document takes them, or the caller frees them on an error).
        var entries: UnsafeMutablePointer<Entry>
        var count = 0
        private var capacity: Int

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            // About one value per 8 bytes in a typical message (grown when there are more).
            capacity = Swift.min(bytes.count / 8 + 4, 64)
            entries = .allocate(capacity: capacity)
        }

        /// Appends `entry`: its index.
        @discardableResult
        private mutating func append(_ entry: Entry) -> Int {
            if count == capacity {
                let grown = UnsafeMutablePointer<Entry>.allocate(capacity: capacity * 2)
                grown.moveInitialize(from: entries, count: count)
                entries.deallocate()
                entries = grown
                capacity *= 2
            }
            (entries + count).initialize(to: entry)
            count += 1
            return count - 1
        }

        func error(_ what: String) -> DecodingError {
            .dataCorrupted(DecodingError.Context(
                codingPath: [], debugDescription: "The given data was not valid JSON: \(what) at byte \(position)."))
        }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(DecodingError) {
            guard position < bytes.count else { throw error("Unexpected end of input") }
            switch bytes[position] {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal("true", .true)
            case UInt8(ascii: "f"): try literal("false", .false)
            case UInt8(ascii: "n"): try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            default: throw error("Unexpected character '\(Unicode.Scalar(bytes[position]))'")
            }
        }

        mutating func literal(_ text: StaticString, _ kind: Kind) throws(DecodingError) {
            let length = text.utf8CodeUnitCount
            let matches = position + length <= bytes.count && text.withUTF8Buffer { expected in
                (0..<length).allSatisfy { bytes[position + $0] == expected[$0] }
            }
            guard matches else { throw error("Invalid literal") }
            append(Entry(kind: kind, start: position, end: position + length, next: count + 1))
            position += length
        }

        mutating func object(depth: Int) throws(DecodingError) {
            guard depth <= BusJSON.maximumDepth else { throw error("Nested deeper than \(BusJSON.maximumDepth)") }
            let index = append(Entry(kind: .object, start: position, end: position))
            position += 1
            skipWhitespace()
            var members = 0
            // A sieve of the keys so far (a bit from each key's length and end bytes): two keys of
            // one name set the same bit, so only a bit set twice is checked against the keys
            // before it. An escaped key counts as a possible repeat.
            var seen: UInt64 = 0
            var mayRepeat = false
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
            } else {
                while true {
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error(position < bytes.count ? "Expected a key (a string)" : "Unexpected end of input")
                    }
                    try string()
                    if !mayRepeat {
                        let key = entries[count - 1]
                        if key.escaped {
                            mayRepeat = true
                        } else {
                            let bit = Self.sieveBit(bytes, key.start, key.end)
                            if seen & bit != 0 { mayRepeat = repeats(key, inObject: index, before: count - 1) }
                            seen |= bit
                        }
                    }
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("Expected ':'") }
                    position += 1
                    skipWhitespace()
                    try value(depth: depth)
                    members += 1
                    if try !anotherElement(closer: UInt8(ascii: "}"), "Expected ',' or '}'") { break }
                }
            }
            close(index, members: members)
            entries[index].mayRepeatKeys = mayRepeat
        }

        /// Whether `key` (unescaped) has the bytes of an unescaped key of object `index` before it
        /// (entry `before` is the key itself).
        private func repeats(_ key: Entry, inObject index: Int, before: Int) -> Bool {
            var member = index + 1
            while member < before {
                let other = entries[member]
                if !other.escaped, other.end - other.start == key.end - key.start {
                    var offset = 0
                    while offset < key.end - key.start, bytes[other.start + offset] == bytes[key.start + offset] { offset += 1 }
                    if offset == key.end - key.start { return true }
                }
                member = entries[member + 1].next
            }
            return false
        }

        /// A key's bit in an object's sieve: from its length and its first and last bytes.
        @inline(__always)
        private static func sieveBit(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UInt64 {
            let length = end - start
            guard length > 0 else { return 1 }
            let mixed = UInt64(truncatingIfNeeded: length) &* 0x9E37 &+ UInt64(bytes[start]) &* 0x1F &+ UInt64(bytes[end - 1])
            return 1 << (mixed & 63)
        }

        mutating func array(depth: Int) throws(DecodingError) {
            guard depth <= BusJSON.maximumDepth else { throw error("Nested deeper than \(BusJSON.maximumDepth)") }
            let index = append(Entry(kind: .array, start: position, end: position))
            position += 1
            skipWhitespace()
            var members = 0
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
            } else {
                while true {
                    try value(depth: depth)
                    members += 1
                    if try !anotherElement(closer: UInt8(ascii: "]"), "Expected ',' or ']'") { break }
                }
            }
            close(index, members: members)
        }

        /// After a container's element: true past a ',' (another element must follow: a trailing
        /// comma is refused by the element's own check), false past `closer`; else `expected`.
        private mutating func anotherElement(closer: UInt8, _ expected: String) throws(DecodingError) -> Bool {
            skipWhitespace()
            guard position < bytes.count else { throw error("Unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                skipWhitespace()
                return true
            }
            guard bytes[position] == closer else { throw error(expected) }
            position += 1
            return false
        }

        /// A container read to its end: where it ends, its element count, and its next sibling.
        private func close(_ index: Int, members: Int) {
            entries[index].end = position
            entries[index].count = members
            entries[index].next = count
        }

        mutating func number() throws(DecodingError) {
            let start = position
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("Expected a digit") }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
                if position < bytes.count, isDigit(bytes[position]) { throw error("A number with a leading zero") }
            } else {
                skipDigits()
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard position < bytes.count, isDigit(bytes[position]) else { throw error("Expected a digit after '.'") }
                skipDigits()
            }
            if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard position < bytes.count, isDigit(bytes[position]) else { throw error("Expected a digit in the exponent") }
                skipDigits()
            }
            append(Entry(kind: .number, start: start, end: position, next: count + 1))
        }

        private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

        private mutating func skipDigits() {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }

        mutating func string() throws(DecodingError) {
            position += 1  // the opening quote
            let start = position
            var escaped = false
            position = BusJSONScan.plainASCII(bytes, from: position)
            while true {
                guard position < bytes.count else { throw error("Unterminated string") }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\") {
                    escaped = true
                    try escape()
                } else if byte < 0x20 {
                    throw error("Unescaped control character in a string")
                } else if byte < 0x80 {
                    position += 1
                } else {
                    try utf8Sequence()
                }
            }
            append(Entry(kind: .string, escaped: escaped, start: start, end: position, next: count + 1))
            position += 1  // the closing quote
        }

        private mutating func escape() throws(DecodingError) {
            guard position + 1 < bytes.count else { throw error("Unterminated escape") }
            switch bytes[position + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                position += 2
            case UInt8(ascii: "u"):
                let unit = try hexEscape()
                switch unit {
                case 0xD800...0xDBFF:
                    guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                        throw error("A high surrogate escape without its low surrogate")
                    }
                    guard (0xDC00...0xDFFF).contains(try hexEscape()) else {
                        throw error("A high surrogate escape without its low surrogate")
                    }
                case 0xDC00...0xDFFF:
                    throw error("A low surrogate escape without its high surrogate")
                default:
                    break
                }
            default:
                throw error("Invalid escape")
            }
        }

        /// `\uXXXX` at `position`: its value.
        private mutating func hexEscape() throws(DecodingError) -> UInt32 {
            guard position + 6 <= bytes.count else { throw error("Unterminated \\u escape") }
            var value: UInt32 = 0
            for offset in 2..<6 {
                guard let digit = BusJSONDocument.hexValue(bytes[position + offset]) else { throw error("Invalid \\u escape") }
                value = value << 4 | UInt32(digit)
            }
            position += 6
            return value
        }

        /// One multi-byte UTF-8 sequence, checked (no overlong form, no surrogate, at most U+10FFFF)
        /// by NBP-1's own rule (`UTF8Validation`).
        private mutating func utf8Sequence() throws(DecodingError) {
            guard let length = UTF8Validation.sequenceLength(bytes, at: position) else {
                let lead = bytes[position]
                let known = (0xC2...0xF4).contains(lead)
                throw error(known && bytes.count - position < Self.declaredLength(lead) ? "Invalid UTF-8 (truncated)" : "Invalid UTF-8")
            }
            position += length
        }

        /// The length a lead byte declares (for the truncation message).
        private static func declaredLength(_ lead: UInt8) -> Int {
            lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
        }
    }
}
