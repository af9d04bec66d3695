import FoundationEssentials

/// The `Decoder` `BusJSON.decode` hands a value: one entry of a checked `BusJSONDocument`
/// (index -1: a `superDecoder` whose key is absent, read as `null`, as Foundation does).
/// A struct of three words: it fits an existential's inline buffer, so handing a value its
/// `any Decoder` allocates nothing.
struct BusJSONDecoderImpl: Decoder {
    let document: BusJSONDocument
    let index: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(document: BusJSONDocument, index: Int, codingPath: [any CodingKey]) {
        self.document = document
        self.index = index
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try document.expect(.object, at: index, as: [String: Any].self, path: codingPath)
        return KeyedDecodingContainer(BusJSONKeyedDecoding<Key>(document: document, index: index, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try document.expect(.array, at: index, as: [Any].self, path: codingPath)
        return BusJSONUnkeyedDecoding(document: document, index: index, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        BusJSONSingleValueDecoding(document: document, index: index, codingPath: codingPath)
    }
}

extension BusJSONDocument {
    func kind(at index: Int) -> Kind { index < 0 ? .null : self[index].kind }

    func expect(_ kind: Kind, at index: Int, as type: Any.Type, path: @autoclosure () -> [any CodingKey]) throws(DecodingError) {
        let found = self.kind(at: index)
        guard found == kind else { throw mismatch(type, found, path()) }
    }

    func mismatch(_ type: Any.Type, _ found: Kind, _ path: [any CodingKey]) -> DecodingError {
        if found == .null {
            return .valueNotFound(type, DecodingError.Context(
                codingPath: path, debugDescription: "Cannot get \(type) -- found null value instead"))
        }
        return .typeMismatch(type, DecodingError.Context(
            codingPath: path, debugDescription: "Expected to decode \(type) but found \(found) instead."))
    }

    func corrupted(_ what: String, _ path: [any CodingKey]) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: what))
    }

    // MARK: Values

    func decode<T: Decodable>(_ type: T.Type, at index: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
        if T.self == String.self { return BusJSONCast.cast(try decodeString(at: index, path: path()), to: T.self) }
        if T.self == Int.self { return BusJSONCast.cast(try decodeInteger(Int.self, at: index, path: path()), to: T.self) }
        if T.self == Double.self { return BusJSONCast.cast(try decodeDouble(at: index, path: path()), to: T.self) }
        if T.self == Bool.self { return BusJSONCast.cast(try decodeBool(at: index, path: path()), to: T.self) }
        if T.self == [String].self {
            return BusJSONCast.cast(try decodeArray(at: index, path: path()) { element, offset throws in
                try decodeString(at: element, path: path() + [BusJSONKey(index: offset)])
            }, to: T.self)
        }
        if T.self == Date.self {
            // Foundation's default, `.deferredToDate`: seconds since 2001-01-01.
            return BusJSONCast.cast(Date(timeIntervalSinceReferenceDate: try decodeDouble(at: index, path: path())), to: T.self)
        }
        if T.self == Data.self {
            guard let data = Data(base64Encoded: try decodeString(at: index, path: path())) else {
                throw corrupted("Encountered Data is not valid Base64.", path())
            }
            return BusJSONCast.cast(data, to: T.self)
        }
        if T.self == URL.self {
            guard let url = URL(string: try decodeString(at: index, path: path())) else {
                throw corrupted("Invalid URL string.", path())
            }
            return BusJSONCast.cast(url, to: T.self)
        }
        if T.self == Decimal.self {
            try expect(.number, at: index, as: Decimal.self, path: path())
            guard let decimal = Decimal(string: numberText(self[index])) else {
                throw corrupted("Parsed JSON number <\(numberText(self[index]))> does not fit in Decimal.", path())
            }
            return BusJSONCast.cast(decimal, to: T.self)
        }
        return try T(from: BusJSONDecoderImpl(document: self, index: index, codingPath: path()))
    }

    /// An array's elements, each read by `element` (given its entry and its offset).
    private func decodeArray<E>(
        at index: Int, path: @autoclosure () -> [any CodingKey], _ element: (Int, Int) throws -> E
    ) throws -> [E] {
        try expect(.array, at: index, as: [E].self, path: path())
        let entry = self[index]
        var result: [E] = []
        result.reserveCapacity(entry.count)
        var child = index + 1
        for offset in 0..<entry.count {
            result.append(try element(child, offset))
            child = self[child].next
        }
        return result
    }

    func decodeNil(at index: Int) -> Bool { kind(at: index) == .null }

    func decodeBool(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(DecodingError) -> Bool {
        switch kind(at: index) {
        case .true: return true
        case .false: return false
        case let found: throw mismatch(Bool.self, found, path())
        }
    }

    func decodeString(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(DecodingError) -> String {
        try expect(.string, at: index, as: String.self, path: path())
        return string(self[index])
    }

    func numberText(_ entry: Entry) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[entry.start..<entry.end]), as: UTF8.self) }
    }

    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type, at index: Int, path: @autoclosure () -> [any CodingKey]) throws(DecodingError) -> I {
        try expect(.number, at: index, as: I.self, path: path())
        let entry = self[index]
        if let value = bytes.withUnsafeBufferPointer({ Self.integer(I.self, UnsafeBufferPointer(rebasing: $0[entry.start..<entry.end])) }) {
            return value
        }
        // A fraction or an exponent ("1e3", "2.0"): accepted when the value is that integer exactly.
        let text = numberText(entry)
        let fractionOrExponent = text.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
        // Only then: digits alone that do not fit must not round (through a Double) into range.
        if fractionOrExponent, let double = Double(text), double.magnitude < 0x1p53, let value = I(exactly: double) {
            return value
        }
        throw corrupted("Parsed JSON number <\(text)> does not fit in \(I.self).", path())
    }

    /// Digits only, with an optional minus: the value, nil when it has a fraction, an exponent,
    /// or does not fit.
    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ text: UnsafeBufferPointer<UInt8>) -> I? {
        var index = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative {
            guard I.isSigned else { return text.count == 2 && text[1] == UInt8(ascii: "0") ? 0 : nil }
            index = 1
        }
        var value: I = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative
                ? times.subtractingReportingOverflow(I(digit)) : times.addingReportingOverflow(I(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
    }

    func decodeDouble(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(DecodingError) -> Double {
        try expect(.number, at: index, as: Double.self, path: path())
        let entry = self[index]
        if let fast = bytes.withUnsafeBufferPointer({ Self.exactDouble(UnsafeBufferPointer(rebasing: $0[entry.start..<entry.end])) }) {
            return fast
        }
        let text = numberText(entry)
        guard let value = Double(text), value.isFinite else {
            throw corrupted("Number \(text) is not representable in Swift.", path())
        }
        return value
    }

    func decodeFloat(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(DecodingError) -> Float {
        let double = try decodeDouble(at: index, path: path())
        let value = Float(double)
        guard value.isFinite else { throw corrupted("Number \(numberText(self[index])) is not representable in Float.", path()) }
        return value
    }

    private static let powersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { value, _ in value * 10 }
    }

    /// A number whose digits fit 2^53 and whose decimal exponent is at most 22 either way: one
    /// exact multiplication or division, so correctly rounded (Clinger's fast path). Nil: too
    /// long, parsed by `Double(String)` instead.
    static func exactDouble(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { index = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var exponent = 0
        var inFraction = false
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte | 0x20 == UInt8(ascii: "e") {
                break
            } else {
                if mantissa != 0 || byte != UInt8(ascii: "0") { digits += 1 }
                guard digits <= 15 else { return nil }
                mantissa = mantissa * 10 + UInt64(byte &- UInt8(ascii: "0"))
                if inFraction { exponent -= 1 }
            }
            index += 1
        }
        if index < text.count {  // the exponent
            index += 1
            var sign = 1
            if text[index] == UInt8(ascii: "-") {
                sign = -1
                index += 1
            } else if text[index] == UInt8(ascii: "+") {
                index += 1
            }
            var value = 0
            while index < text.count {
                value = value * 10 + Int(text[index] &- UInt8(ascii: "0"))
                guard value <= 1000 else { return nil }
                index += 1
            }
            exponent += sign * value
        }
        guard exponent >= -22, exponent <= 22 else { return mantissa == 0 ? (negative ? -0.0 : 0.0) : nil }
        var value = Double(mantissa)
        value = exponent < 0 ? value / powersOfTen[-exponent] : value * powersOfTen[exponent]
        return negative ? -value : value
    }
}

extension BusJSONDocument {
    /// The entry of `key`'s value, nil when absent (the first member of that name, as before).
    ///
    /// The member after the one found last is tried first (the object's `cursor`): a synthesized
    /// `Decodable` asks for its keys in declaration order, the order BusJSON (and Foundation's
    /// encoder, for a synthesized `Encodable`) writes them, so each look-up is one comparison.
    /// Taken only when no key of the object repeats (then the member found is the only one of
    /// that name); otherwise, or when it is not the key, the members are searched from the first.
    func member(_ key: String, in index: Int) -> Int? {
        var key = key
        return key.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { bytes in
                let object = self[index]
                guard object.count > 0 else { return nil }
                if !object.mayRepeatKeys {
                    let tried = object.cursor == 0 ? index + 1 : object.cursor
                    if tried < object.next {  // a member (the cursor steps from member to member)
                        let entry = self[tried]
                        if entry.end - entry.start == wanted.count, Self.equalBytes(bytes, from: entry.start, wanted) {
                            setCursor(self[tried + 1].next, of: index)
                            return tried + 1
                        }
                    }
                }
                var member = index + 1
                for _ in 0..<object.count {
                    let entry = self[member]
                    let following = self[member + 1].next
                    if entry.escaped {
                        if unescape(entry).elementsEqual(wanted) {
                            setCursor(following, of: index)
                            return member + 1
                        }
                    } else if entry.end - entry.start == wanted.count, Self.equalBytes(bytes, from: entry.start, wanted) {
                        setCursor(following, of: index)
                        return member + 1
                    }
                    member = following
                }
                return nil
            }
        }
    }

    /// Whether `bytes` from `start` on begin with `wanted` (which fits: the caller checked).
    @inline(__always)
    private static func equalBytes(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        var offset = 0
        while offset < wanted.count {
            guard bytes[start + offset] == wanted[offset] else { return false }
            offset += 1
        }
        return true
    }

}

/// A JSON object being read: members are found by comparing the key's UTF-8 with each member's.
struct BusJSONKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let document: BusJSONDocument
    let index: Int
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        var keys: [Key] = []
        var member = index + 1
        for _ in 0..<document[index].count {
            if let key = Key(stringValue: document.string(document[member])) { keys.append(key) }
            member = document[member + 1].next
        }
        return keys
    }

    /// The entry of `key`'s value, nil when absent (`BusJSONDocument.member(_:in:)`).
    private func find(_ key: String) -> Int? { document.member(key, in: index) }

    private func value(_ key: Key) throws(DecodingError) -> Int {
        guard let value = find(key.stringValue) else {
            throw .keyNotFound(key, DecodingError.Context(
                codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return value
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func contains(_ key: Key) -> Bool { find(key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { document.decodeNil(at: try value(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try document.decodeBool(at: try value(key), path: path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try document.decodeString(at: try value(key), path: path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try document.decodeDouble(at: try value(key), path: path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try document.decodeFloat(at: try value(key), path: path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try document.decodeInteger(type, at: try value(key), path: path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try document.decodeInteger(type, at: try value(key), path: path(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try document.decode(type, at: try value(key), path: path(key))
    }

    /// One look-up for an optional member (the default asks `contains`, then `decodeNil`, then decodes).
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = find(key.stringValue), !document.decodeNil(at: value) else { return nil }
        return try document.decode(type, at: value, path: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let value = try value(key)
        try document.expect(.object, at: value, as: [String: Any].self, path: path(key))
        return KeyedDecodingContainer(BusJSONKeyedDecoding<NestedKey>(document: document, index: value, codingPath: path(key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let value = try value(key)
        try document.expect(.array, at: value, as: [Any].self, path: path(key))
        return BusJSONUnkeyedDecoding(document: document, index: value, codingPath: path(key))
    }

    func superDecoder() throws -> any Decoder {
        BusJSONDecoderImpl(document: document, index: find("super") ?? -1, codingPath: codingPath + [BusJSONKey.super])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        BusJSONDecoderImpl(document: document, index: find(key.stringValue) ?? -1, codingPath: path(key))
    }
}

/// A JSON array being read, element by element.
struct BusJSONUnkeyedDecoding: UnkeyedDecodingContainer {
    let document: BusJSONDocument
    let codingPath: [any CodingKey]
    let count: Int?
    private(set) var currentIndex = 0
    /// The entry of the element at `currentIndex`.
    private var element: Int

    init(document: BusJSONDocument, index: Int, codingPath: [any CodingKey]) {
        self.document = document
        self.codingPath = codingPath
        count = document[index].count
        element = index + 1
    }

    var isAtEnd: Bool { currentIndex >= (count ?? 0) }

    private var elementPath: [any CodingKey] { codingPath + [BusJSONKey(index: currentIndex)] }

    /// The next element's entry, moving past it.
    private mutating func next(_ type: Any.Type) throws(DecodingError) -> Int {
        guard !isAtEnd else {
            throw .valueNotFound(type, DecodingError.Context(
                codingPath: elementPath, debugDescription: "Unkeyed container is at end."))
        }
        let current = element
        element = document[current].next
        currentIndex += 1
        return current
    }

    /// Decodes the next element, moving past it only when it decoded (as Foundation does).
    private mutating func decodeNext<T>(_ type: T.Type, _ read: (BusJSONDocument, Int, [any CodingKey]) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(
                codingPath: elementPath, debugDescription: "Unkeyed container is at end."))
        }
        let value = try read(document, element, elementPath)
        _ = try next(type)
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, document.decodeNil(at: element) else {
            if isAtEnd { _ = try next(Never.self) }
            return false
        }
        _ = try next(Never.self)
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try decodeNext(type) { try $0.decodeBool(at: $1, path: $2) } }
    mutating func decode(_ type: String.Type) throws -> String { try decodeNext(type) { try $0.decodeString(at: $1, path: $2) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try decodeNext(type) { try $0.decodeDouble(at: $1, path: $2) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try decodeNext(type) { try $0.decodeFloat(at: $1, path: $2) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) } }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeNext(type) { try $0.decode(type, at: $1, path: $2) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try decodeNext(KeyedDecodingContainer<NestedKey>.self) { document, index, path throws in
            try document.expect(.object, at: index, as: [String: Any].self, path: path)
            return KeyedDecodingContainer(BusJSONKeyedDecoding<NestedKey>(document: document, index: index, codingPath: path))
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try decodeNext((any UnkeyedDecodingContainer).self) { document, index, path throws in
            try document.expect(.array, at: index, as: [Any].self, path: path)
            return BusJSONUnkeyedDecoding(document: document, index: index, codingPath: path)
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        try decodeNext((any Decoder).self) { BusJSONDecoderImpl(document: $0, index: $1, codingPath: $2) }
    }
}

/// One value.
struct BusJSONSingleValueDecoding: SingleValueDecodingContainer {
    let document: BusJSONDocument
    let index: Int
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { document.decodeNil(at: index) }
    func decode(_ type: Bool.Type) throws -> Bool { try document.decodeBool(at: index, path: codingPath) }
    func decode(_ type: String.Type) throws -> String { try document.decodeString(at: index, path: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try document.decodeDouble(at: index, path: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try document.decodeFloat(at: index, path: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try document.decodeInteger(type, at: index, path: codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try document.decodeInteger(type, at: index, path: codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try document.decode(type, at: index, path: codingPath)
    }
}
