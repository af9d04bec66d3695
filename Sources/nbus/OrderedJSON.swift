/// A JSON value whose objects keep their members in order, keys exactly as written.
///
/// `JSONSerialization` (and any `Dictionary`) merges keys Swift's `String` finds equal, and
/// `String` equality is canonical equivalence: "é" written precomposed and decomposed are one key
/// there, two on NBP/1's wire. `publish --input json` reads a line's `headers` through this, so
/// what `subscribe --format json` printed comes back byte for byte.
enum OrderedJSON: Equatable {
    case string(String)
    /// A number, as its JSON text.
    case number(String)
    case bool(Bool)
    case null
    case array([OrderedJSON])
    case object([Member])

    /// One member of an object.
    struct Member: Equatable {
        let key: String
        let value: OrderedJSON
        /// Where the value's text is in the parsed bytes, as written (spaces around it left out):
        /// `publish --input json` sends an object or array payload this way, not re-serialized.
        var text: Range<Int> = 0..<0

        static func == (left: Member, right: Member) -> Bool { left.key == right.key && left.value == right.value }
    }

    /// Parses a whole JSON text; nil when it is not valid JSON (nesting deeper than 64 included).
    static func parse(_ bytes: [UInt8]) -> OrderedJSON? {
        var parser = Parser(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.index == bytes.count ? value : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> OrderedJSON? {
            guard depth < 64 else { return nil }
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(OrderedJSON.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func literal(_ text: String, _ value: OrderedJSON) -> OrderedJSON? {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else { return nil }
            index += expected.count
            return value
        }

        mutating func number() -> OrderedJSON? {
            let start = index
            while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
            guard index > start, let text = String(validating: bytes[start..<index], as: UTF8.self),
                Double(text) != nil
            else { return nil }
            return .number(text)
        }

        mutating func object(depth: Int) -> OrderedJSON? {
            index += 1  // {
            var members: [Member] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                let start = index
                guard let value = value(depth: depth + 1) else { return nil }
                members.append(Member(key: key, value: value, text: start..<index))
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) -> OrderedJSON? {
            index += 1  // [
            var elements: [OrderedJSON] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                guard let element = value(depth: depth + 1) else { return nil }
                elements.append(element)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { return nil }
                index += 1
                return .array(elements)
            }
        }

        /// A string at `index` (its opening quote), escapes decoded, scalars kept as written.
        mutating func string() -> String? {
            index += 1  // "
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []  // unescaped bytes, decoded as UTF-8 together
            func flush() -> Bool {
                guard !run.isEmpty else { return true }
                guard let text = String(validating: run, as: UTF8.self) else { return false }
                scalars.append(contentsOf: text.unicodeScalars)
                run.removeAll()
                return true
            }
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return flush() ? String(scalars) : nil
                case UInt8(ascii: "\\"):
                    guard flush(), index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else { return nil }
                        if (0xD800...0xDBFF).contains(code) {
                            // A high surrogate must be followed by \u and a low one.
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                            else { return nil }
                            index += 2
                            guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        scalars.append(scalar)
                    default:
                        return nil
                    }
                case 0x00..<0x20:
                    return nil  // control characters must be escaped
                default:
                    run.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4,
                let text = String(validating: bytes[index..<index + 4], as: UTF8.self), let value = UInt32(text, radix: 16)
            else { return nil }
            index += 4
            return value
        }
    }
}
