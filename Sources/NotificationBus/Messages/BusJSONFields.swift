import FoundationEssentials

// The Codable-free JSON path (issue 42's broker target): a message type writes and reads its
// fields itself, with no encoder, decoder, container boxes or `CodingKey` witnesses in between.
// The bytes are the ones `BusJSON.encode` writes for the same value through a synthesized
// `Codable` conformance (keys in declaration order, nil optionals left out, the same number and
// string forms), so either side of the wire may use either path (docs/typed-messages.md,
// "The fast path").

/// A value that writes itself as one JSON value without `Encodable`: what
/// `BusJSONObjectWriter.field(_:_:)` and `BusJSONValueWriter.write(_:)` accept.
///
/// The JSON scalars (`Bool`, the integer types, `Double`, `Float`, `String`), `Date`, `Data`,
/// `URL`, `Decimal`, arrays and optionals of writable values conform. A type of your own conforms
/// by writing its own JSON (usually an object, with `writeObject`); write what its `Encodable`
/// conformance would, so both paths make the same bytes.
public protocol BusJSONWritable {
    /// Writes `self` as exactly one JSON value.
    func writeBusJSON(to writer: inout BusJSONValueWriter) throws
}

/// A value that reads itself from one JSON value without `Decodable`: what
/// `BusJSONObjectReader.field(_:as:)` and `BusJSONValueReader.read(_:)` return.
public protocol BusJSONReadable {
    /// Reads a value from `reader`: throws a `DecodingError` (with its coding path) when the
    /// JSON there is not one.
    init(busJSON reader: BusJSONValueReader) throws
}

extension BusJSON {
    /// A JSON object written field by field: `BusMessage.encodeBusPayload` without `Codable`.
    ///
    /// ```swift
    /// static func encodeBusPayload(_ message: Self) throws -> [UInt8] {
    ///     try BusJSON.writeObject { object in
    ///         object.field("id", message.id)
    ///         try object.field("total", message.total)
    ///     }
    /// }
    /// ```
    ///
    /// Keys are written in the order given, each once (the caller's to keep unique).
    public static func writeObject(_ body: (inout BusJSONObjectWriter) throws -> Void) throws -> [UInt8] {
        let writer = BusJSONWriter(reservingStack: false)
        var object = BusJSONObjectWriter(writer: writer, path: [])
        writer.append(UInt8(ascii: "{"))
        try body(&object)
        writer.append(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// The JSON object `bytes` holds, checked (RFC 8259, as `decode`), for reading field by
    /// field: `BusMessage.decodeBusPayload` without `Codable`. Throws a `DecodingError` when
    /// `bytes` is not JSON or not an object.
    public static func readObject(_ bytes: [UInt8]) throws -> BusJSONObjectReader {
        let document = try BusJSONDocument(bytes)
        try document.expect(.object, at: 0, as: [String: Any].self, path: [])
        return BusJSONObjectReader(document: document, index: 0, path: [])
    }
}

// MARK: Writing

/// Writes the members of one JSON object (from `BusJSON.writeObject` or
/// `BusJSONValueWriter.writeObject`). Valid only inside the closure it is handed to.
public struct BusJSONObjectWriter {
    let writer: BusJSONWriter
    let path: [any CodingKey]
    private var count = 0

    init(writer: BusJSONWriter, path: [any CodingKey]) {
        self.writer = writer
        self.path = path
    }

    /// The comma and the key of the next member.
    private mutating func begin(_ key: String) {
        if count > 0 { writer.append(UInt8(ascii: ",")) }
        count += 1
        writer.writeString(key)
        writer.append(UInt8(ascii: ":"))
    }

    private func path(_ key: String) -> [any CodingKey] { path + [BusJSONKey(stringValue: key)] }

    /// `"key":value` for the common scalars (no protocol dispatch).
    public mutating func field(_ key: String, _ value: Int) {
        begin(key)
        writer.writeInteger(value)
    }

    public mutating func field(_ key: String, _ value: String) {
        begin(key)
        writer.writeString(value)
    }

    public mutating func field(_ key: String, _ value: Bool) {
        begin(key)
        writer.writeBool(value)
    }

    /// Throws `EncodingError.invalidValue` for a non-finite value (JSON has none), as `encode` does.
    public mutating func field(_ key: String, _ value: Double) throws {
        begin(key)
        try writer.writeDouble(value, path: path(key))
    }

    public mutating func field(_ key: String, _ value: [String]) {
        begin(key)
        writer.append(UInt8(ascii: "["))
        for (index, element) in value.enumerated() {
            if index > 0 { writer.append(UInt8(ascii: ",")) }
            writer.writeString(element)
        }
        writer.append(UInt8(ascii: "]"))
    }

    /// `"key":value` for any writable value (arrays, nested types, the other number types).
    public mutating func field<T: BusJSONWritable>(_ key: String, _ value: T) throws {
        begin(key)
        var slot = BusJSONValueWriter(writer: writer, place: BusJSONPlace(path, key: key))
        try value.writeBusJSON(to: &slot)
        try slot.finish()
    }

    /// `"key":value`, or nothing when `value` is nil: a synthesized `Encodable` leaves a nil
    /// optional out (`encodeIfPresent`), and so does this.
    public mutating func field<T: BusJSONWritable>(_ key: String, _ value: T?) throws {
        guard let value else { return }
        try field(key, value)
    }

    /// `"key":value` through `value`'s `Encodable` conformance (`BusJSON.encode`'s bytes), for a
    /// type that does not write itself.
    public mutating func field<T: Encodable>(_ key: String, encoding value: T) throws {
        begin(key)
        writer.append(try BusJSON.encodeFragment(value))
    }

    /// As `field(_:encoding:)`, nothing when `value` is nil.
    public mutating func field<T: Encodable>(_ key: String, encoding value: T?) throws {
        guard let value else { return }
        try field(key, encoding: value)
    }

    /// `"key":` then the one value `body` writes (a nested object or array written in place).
    public mutating func field(_ key: String, _ body: (inout BusJSONValueWriter) throws -> Void) throws {
        begin(key)
        var slot = BusJSONValueWriter(writer: writer, place: BusJSONPlace(path, key: key))
        try body(&slot)
        try slot.finish()
    }
}

/// Writes exactly one JSON value in the place its caller began (a member, an element, a
/// `BusJSONWritable` value's own JSON). Valid only inside the call it is handed to.
public struct BusJSONValueWriter {
    let writer: BusJSONWriter
    let place: BusJSONPlace
    private var written = false

    init(writer: BusJSONWriter, place: BusJSONPlace) {
        self.writer = writer
        self.place = place
    }

    var path: [any CodingKey] { place.keys }

    /// A second value in one place would not be JSON: refused.
    private mutating func begin() throws {
        guard !written else {
            throw EncodingError.invalidValue((), EncodingError.Context(
                codingPath: path, debugDescription: "A second JSON value written in one place."))
        }
        written = true
    }

    /// A place left empty is refused (as a `Codable` value that encodes nothing at the top).
    func finish() throws {
        guard written else {
            throw EncodingError.invalidValue((), EncodingError.Context(
                codingPath: path, debugDescription: "No JSON value written."))
        }
    }

    public mutating func writeNull() throws {
        try begin()
        writer.writeNull()
    }

    public mutating func write(_ value: Bool) throws {
        try begin()
        writer.writeBool(value)
    }

    public mutating func write(_ value: String) throws {
        try begin()
        writer.writeString(value)
    }

    public mutating func write<I: FixedWidthInteger>(integer value: I) throws {
        try begin()
        writer.writeInteger(value)
    }

    /// Throws `EncodingError.invalidValue` for a non-finite value.
    public mutating func write(_ value: Double) throws {
        try begin()
        try writer.writeDouble(value, path: path)
    }

    /// Throws `EncodingError.invalidValue` for a non-finite value.
    public mutating func write(_ value: Float) throws {
        try begin()
        try writer.writeFloat(value, path: path)
    }

    /// A writable value (its own `writeBusJSON`).
    public mutating func write<T: BusJSONWritable>(_ value: T) throws {
        try value.writeBusJSON(to: &self)
    }

    /// The value through its `Encodable` conformance.
    public mutating func write<T: Encodable>(encoding value: T) throws {
        try begin()
        writer.append(try BusJSON.encodeFragment(value))
    }

    /// An object whose members `body` writes.
    public mutating func writeObject(_ body: (inout BusJSONObjectWriter) throws -> Void) throws {
        try begin()
        var object = BusJSONObjectWriter(writer: writer, path: path)
        writer.append(UInt8(ascii: "{"))
        try body(&object)
        writer.append(UInt8(ascii: "}"))
    }

    /// An array whose elements `body` writes.
    public mutating func writeArray(_ body: (inout BusJSONArrayWriter) throws -> Void) throws {
        try begin()
        var array = BusJSONArrayWriter(writer: writer, path: path)
        writer.append(UInt8(ascii: "["))
        try body(&array)
        writer.append(UInt8(ascii: "]"))
    }
}

/// Writes the elements of one JSON array. Valid only inside the closure it is handed to.
public struct BusJSONArrayWriter {
    let writer: BusJSONWriter
    let path: [any CodingKey]
    private var count = 0

    init(writer: BusJSONWriter, path: [any CodingKey]) {
        self.writer = writer
        self.path = path
    }

    /// The next element: the one value `body` writes.
    public mutating func element(_ body: (inout BusJSONValueWriter) throws -> Void) throws {
        if count > 0 { writer.append(UInt8(ascii: ",")) }
        var slot = BusJSONValueWriter(writer: writer, place: BusJSONPlace(path, index: count))
        count += 1
        try body(&slot)
        try slot.finish()
    }

    /// The next element: a writable value.
    public mutating func element<T: BusJSONWritable>(_ value: T) throws {
        try element { try $0.write(value) }
    }
}

extension BusJSON {
    /// `value`'s JSON as a part of another document (no top-level check on what it encodes).
    static func encodeFragment<T: Encodable>(_ value: T) throws -> [UInt8] {
        try encode(value)
    }
}

extension BusJSONWriter {
    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }
}

/// Where a value is, made into a coding path only when an error needs it (a path array per
/// field would be an allocation per field).
struct BusJSONPlace {
    let base: [any CodingKey]
    let key: String?
    let index: Int

    init(_ base: [any CodingKey], key: String) {
        self.base = base
        self.key = key
        index = 0
    }

    init(_ base: [any CodingKey], index: Int) {
        self.base = base
        key = nil
        self.index = index
    }

    var keys: [any CodingKey] {
        base + [key.map { BusJSONKey(stringValue: $0) } ?? BusJSONKey(index: index)]
    }
}

// MARK: Reading

/// One JSON object of a checked document, read member by member (from `BusJSON.readObject`,
/// `BusJSONValueReader.object()`). Every failure is a `DecodingError` with the member's coding
/// path, as `BusJSON.decode` throws it: a delivered notification that fails is counted as
/// undecodable for its type, never a crash.
public struct BusJSONObjectReader {
    let document: BusJSONDocument
    let index: Int
    let path: [any CodingKey]

    init(document: BusJSONDocument, index: Int, path: [any CodingKey]) {
        self.document = document
        self.index = index
        self.path = path
    }

    /// The number of members.
    public var count: Int { document[index].count }

    /// Whether the object has member `key` (null or not).
    public func contains(_ key: String) -> Bool { document.member(key, in: index) != nil }

    private func keyPath(_ key: String) -> [any CodingKey] { path + [BusJSONKey(stringValue: key)] }

    /// Member `key`'s entry; `DecodingError.keyNotFound` when absent.
    private func entry(_ key: String) throws(DecodingError) -> Int {
        guard let entry = document.member(key, in: index) else {
            throw .keyNotFound(BusJSONKey(stringValue: key), DecodingError.Context(
                codingPath: path, debugDescription: "No value associated with key \(key)."))
        }
        return entry
    }

    /// Member `key`'s value, to read as you choose.
    public func value(_ key: String) throws -> BusJSONValueReader {
        BusJSONValueReader(document: document, index: try entry(key), place: BusJSONPlace(path, key: key))
    }

    // The common scalars, without protocol dispatch.

    public func field(_ key: String, as type: Int.Type = Int.self) throws -> Int {
        try document.decodeInteger(Int.self, at: try entry(key), path: keyPath(key))
    }

    public func field(_ key: String, as type: String.Type = String.self) throws -> String {
        try document.decodeString(at: try entry(key), path: keyPath(key))
    }

    public func field(_ key: String, as type: Bool.Type = Bool.self) throws -> Bool {
        try document.decodeBool(at: try entry(key), path: keyPath(key))
    }

    public func field(_ key: String, as type: Double.Type = Double.self) throws -> Double {
        try document.decodeDouble(at: try entry(key), path: keyPath(key))
    }

    public func field(_ key: String, as type: [String].Type = [String].self) throws -> [String] {
        let array = try entry(key)
        try document.expect(.array, at: array, as: [String].self, path: keyPath(key))
        var result: [String] = []
        result.reserveCapacity(document[array].count)
        var element = array + 1
        for offset in 0..<document[array].count {
            result.append(try document.decodeString(at: element, path: keyPath(key) + [BusJSONKey(index: offset)]))
            element = document[element].next
        }
        return result
    }

    /// Member `key` as any readable type; `keyNotFound` when absent, `valueNotFound` when null.
    public func field<T: BusJSONReadable>(_ key: String, as type: T.Type = T.self) throws -> T {
        try T(busJSON: BusJSONValueReader(document: document, index: try entry(key), place: BusJSONPlace(path, key: key)))
    }

    /// Member `key`, nil when absent or null: what a synthesized `Decodable` does for an
    /// optional property (`decodeIfPresent`).
    public func field<T: BusJSONReadable>(_ key: String, as type: T?.Type = T?.self) throws -> T? {
        guard let entry = document.member(key, in: index), !document.decodeNil(at: entry) else { return nil }
        return try T(busJSON: BusJSONValueReader(document: document, index: entry, place: BusJSONPlace(path, key: key)))
    }

    /// Member `key` through `T`'s `Decodable` conformance, for a type that does not read itself.
    public func field<T: Decodable>(_ key: String, decoding type: T.Type) throws -> T {
        try document.decode(T.self, at: try entry(key), path: keyPath(key))
    }

    /// As `field(_:decoding:)`, nil when absent or null.
    public func field<T: Decodable>(_ key: String, decoding type: T?.Type) throws -> T? {
        guard let entry = document.member(key, in: index), !document.decodeNil(at: entry) else { return nil }
        return try document.decode(T.self, at: entry, path: keyPath(key))
    }
}

/// One value of a checked document, to read as the type you expect.
public struct BusJSONValueReader {
    let document: BusJSONDocument
    let index: Int
    let place: BusJSONPlace

    init(document: BusJSONDocument, index: Int, place: BusJSONPlace) {
        self.document = document
        self.index = index
        self.place = place
    }

    /// Where the value is (for errors).
    public var codingPath: [any CodingKey] { place.keys }

    /// Whether the value is `null`.
    public var isNull: Bool { document.decodeNil(at: index) }

    public func read(_ type: Bool.Type = Bool.self) throws -> Bool { try document.decodeBool(at: index, path: codingPath) }
    public func read(_ type: String.Type = String.self) throws -> String { try document.decodeString(at: index, path: codingPath) }
    public func read(_ type: Double.Type = Double.self) throws -> Double { try document.decodeDouble(at: index, path: codingPath) }
    public func read(_ type: Float.Type = Float.self) throws -> Float { try document.decodeFloat(at: index, path: codingPath) }

    /// An integer that fits `I` exactly (as `Codable` reads it).
    public func read<I: FixedWidthInteger>(integer type: I.Type) throws -> I {
        try document.decodeInteger(I.self, at: index, path: codingPath)
    }

    /// A readable value.
    public func read<T: BusJSONReadable>(_ type: T.Type = T.self) throws -> T { try T(busJSON: self) }

    /// The value through `T`'s `Decodable` conformance.
    public func read<T: Decodable>(decoding type: T.Type) throws -> T {
        try document.decode(T.self, at: index, path: codingPath)
    }

    /// The value as an object; `typeMismatch` otherwise.
    public func object() throws -> BusJSONObjectReader {
        try document.expect(.object, at: index, as: [String: Any].self, path: codingPath)
        return BusJSONObjectReader(document: document, index: index, path: codingPath)
    }

    /// The value as an array, its elements in order; `typeMismatch` otherwise.
    public func array() throws -> [BusJSONValueReader] {
        try document.expect(.array, at: index, as: [Any].self, path: codingPath)
        var elements: [BusJSONValueReader] = []
        elements.reserveCapacity(document[index].count)
        var element = index + 1
        for offset in 0..<document[index].count {
            elements.append(BusJSONValueReader(document: document, index: element, place: BusJSONPlace(place.keys, index: offset)))
            element = document[element].next
        }
        return elements
    }
}

// MARK: Conformances

extension Bool: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(self) }
    public init(busJSON reader: BusJSONValueReader) throws { self = try reader.read(Bool.self) }
}

extension String: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(self) }
    public init(busJSON reader: BusJSONValueReader) throws { self = try reader.read(String.self) }
}

extension Double: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(self) }
    public init(busJSON reader: BusJSONValueReader) throws { self = try reader.read(Double.self) }
}

extension Float: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(self) }
    public init(busJSON reader: BusJSONValueReader) throws { self = try reader.read(Float.self) }
}

/// Every integer type writes and reads itself as a JSON number, range-checked on reading.
extension BusJSONWritable where Self: FixedWidthInteger {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(integer: self) }
}

extension BusJSONReadable where Self: FixedWidthInteger {
    public init(busJSON reader: BusJSONValueReader) throws { self = try reader.read(integer: Self.self) }
}

extension Int: BusJSONWritable, BusJSONReadable {}
extension Int8: BusJSONWritable, BusJSONReadable {}
extension Int16: BusJSONWritable, BusJSONReadable {}
extension Int32: BusJSONWritable, BusJSONReadable {}
extension Int64: BusJSONWritable, BusJSONReadable {}
extension UInt: BusJSONWritable, BusJSONReadable {}
extension UInt8: BusJSONWritable, BusJSONReadable {}
extension UInt16: BusJSONWritable, BusJSONReadable {}
extension UInt32: BusJSONWritable, BusJSONReadable {}
extension UInt64: BusJSONWritable, BusJSONReadable {}

/// Foundation's defaults, as `BusJSON` codes them: seconds since 2001-01-01.
extension Date: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(timeIntervalSinceReferenceDate) }
    public init(busJSON reader: BusJSONValueReader) throws {
        self = Date(timeIntervalSinceReferenceDate: try reader.read(Double.self))
    }
}

/// Base64, as `BusJSON` codes it.
extension Data: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(base64EncodedString()) }
    public init(busJSON reader: BusJSONValueReader) throws {
        self = try reader.read(converting: { Data(base64Encoded: $0) }, invalid: "Encountered Data is not valid Base64.")
    }
}

/// Its absolute string, as `BusJSON` codes it.
extension URL: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(absoluteString) }
    public init(busJSON reader: BusJSONValueReader) throws {
        self = try reader.read(converting: { URL(string: $0) }, invalid: "Invalid URL string.")
    }
}

extension BusJSONValueReader {
    /// A JSON string converted by `convert`; a string it refuses is corrupted data, described as
    /// `JSONDecoder` describes it for the same type (the messages match the `Codable` path's).
    fileprivate func read<Value>(converting convert: (String) -> Value?, invalid: String) throws -> Value {
        guard let value = convert(try read(String.self)) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: codingPath, debugDescription: invalid))
        }
        return value
    }
}

/// A JSON number, as `BusJSON` codes it.
extension Decimal: BusJSONWritable, BusJSONReadable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws { try writer.write(encoding: self) }
    public init(busJSON reader: BusJSONValueReader) throws { self = try reader.read(decoding: Decimal.self) }
}

/// A JSON array.
extension Array: BusJSONWritable where Element: BusJSONWritable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws {
        try writer.writeArray { array in
            for element in self { try array.element(element) }
        }
    }
}

extension Array: BusJSONReadable where Element: BusJSONReadable {
    public init(busJSON reader: BusJSONValueReader) throws {
        self = try reader.array().map { try Element(busJSON: $0) }
    }
}

/// `null` when nil (an element of `[Int?]`, say); a member that is nil is left out instead
/// (`BusJSONObjectWriter.field(_:_:)` taking an optional).
extension Optional: BusJSONWritable where Wrapped: BusJSONWritable {
    public func writeBusJSON(to writer: inout BusJSONValueWriter) throws {
        switch self {
        case .none: try writer.writeNull()
        case .some(let value): try writer.write(value)
        }
    }
}

extension Optional: BusJSONReadable where Wrapped: BusJSONReadable {
    public init(busJSON reader: BusJSONValueReader) throws {
        self = reader.isNull ? nil : try Wrapped(busJSON: reader)
    }
}
