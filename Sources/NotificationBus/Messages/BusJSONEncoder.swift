import FoundationEssentials

/// The `Encoder` `BusJSON.encode` hands a value: one place in the output (a slot frame of its
/// `BusJSONWriter`), filled by one keyed, unkeyed or single-value container. A struct of three
/// words (depth and id share one): it fits an existential's inline buffer, so handing a value its
/// `any Encoder` allocates nothing.
struct BusJSONEncoderImpl: Encoder {
    let writer: BusJSONWriter
    private let depth32: Int32
    let id: UInt32
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    var depth: Int { Int(depth32) }

    /// `depth` is the writer's stack depth: far below `Int32.max` (nesting is bounded by the
    /// value's own recursion); one deeper than that would be refused as out of order.
    init(writer: BusJSONWriter, depth: Int, id: UInt32, codingPath: [any CodingKey]) {
        self.writer = writer
        if let depth = Int32(exactly: depth) {
            self.depth32 = depth
            self.id = id
        } else {
            self.depth32 = 0
            self.id = 0  // never live: out of order
        }
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let (depth, id) = openContainer(.object)
        return KeyedEncodingContainer(BusJSONKeyedEncoding<Key>(writer: writer, depth: depth, id: id, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let (depth, id) = openContainer(.array)
        return BusJSONUnkeyedEncoding(writer: writer, depth: depth, id: id, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        BusJSONSingleValueEncoding(writer: writer, depth: depth, id: id, codingPath: codingPath)
    }

    /// The container filling this place: opened now, or the one opened before when asked again
    /// (a subclass and its superclass sharing one encoder). Id 0 (never live): out of order.
    private func openContainer(_ kind: BusJSONWriter.Kind) -> (Int, UInt32) {
        guard writer.isLive(depth, id) else {
            writer.outOfOrder = true
            return (0, 0)
        }
        let slot = writer.stack[depth]
        if slot.filled {
            guard slot.child != 0, writer.isLive(depth + 1, slot.child), writer.stack[depth + 1].kind == kind else {
                writer.outOfOrder = true
                return (0, 0)
            }
            return (depth + 1, slot.child)
        }
        writer.close(above: depth)
        writer.stack[depth].filled = true
        let opened = writer.open(kind)
        writer.stack[depth].child = opened.id
        return opened
    }
}

/// A JSON object being written.
struct BusJSONKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: BusJSONWriter
    let depth: Int
    let id: UInt32
    let codingPath: [any CodingKey]

    private func begin(_ key: Key) throws {
        try writer.beginMember(depth, id, key.stringValue)
    }

    private func path(_ key: any CodingKey) -> [any CodingKey] { codingPath + [key] }

    mutating func encodeNil(forKey key: Key) throws { try begin(key); writer.writeNull() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try begin(key); writer.writeBool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try begin(key); writer.writeString(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try begin(key); try writer.writeDouble(value, path: path(key)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try begin(key); try writer.writeFloat(value, path: path(key)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try begin(key); writer.writeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try begin(key)
        try writer.encodeValue(value, path: path(key))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let (depth, id) = openNested(key.stringValue, .object)
        return KeyedEncodingContainer(BusJSONKeyedEncoding<NestedKey>(writer: writer, depth: depth, id: id, codingPath: path(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let (depth, id) = openNested(key.stringValue, .array)
        return BusJSONUnkeyedEncoding(writer: writer, depth: depth, id: id, codingPath: path(key))
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: BusJSONKey.super) }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        do {
            try writer.beginMember(depth, id, key.stringValue)
        } catch {
            return BusJSONEncoderImpl(writer: writer, depth: 0, id: 0, codingPath: path(key))
        }
        let slot = writer.push(.slot)
        return BusJSONEncoderImpl(writer: writer, depth: slot.depth, id: slot.id, codingPath: path(key))
    }

    private func openNested(_ key: String, _ kind: BusJSONWriter.Kind) -> (Int, UInt32) {
        do {
            try writer.beginMember(depth, id, key)
        } catch {
            return (0, 0)
        }
        return writer.open(kind)
    }
}

/// A JSON array being written.
struct BusJSONUnkeyedEncoding: UnkeyedEncodingContainer {
    let writer: BusJSONWriter
    let depth: Int
    let id: UInt32
    let codingPath: [any CodingKey]

    var count: Int { writer.isLive(depth, id) ? writer.stack[depth].count : 0 }

    private func begin() throws { try writer.beginElement(depth, id) }
    private var nextPath: [any CodingKey] { codingPath + [BusJSONKey(index: count)] }

    mutating func encodeNil() throws { try begin(); writer.writeNull() }
    mutating func encode(_ value: Bool) throws { try begin(); writer.writeBool(value) }
    mutating func encode(_ value: String) throws { try begin(); writer.writeString(value) }
    mutating func encode(_ value: Double) throws { let path = nextPath; try begin(); try writer.writeDouble(value, path: path) }
    mutating func encode(_ value: Float) throws { let path = nextPath; try begin(); try writer.writeFloat(value, path: path) }
    mutating func encode(_ value: Int) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int8) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int16) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int32) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt8) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt16) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt32) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt64) throws { try begin(); writer.writeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = codingPath + [BusJSONKey(index: count)]
        try begin()
        try writer.encodeValue(value, path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        let (depth, id) = openNested(.object)
        return KeyedEncodingContainer(BusJSONKeyedEncoding<NestedKey>(writer: writer, depth: depth, id: id, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let (depth, id) = openNested(.array)
        return BusJSONUnkeyedEncoding(writer: writer, depth: depth, id: id, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        do {
            try begin()
        } catch {
            return BusJSONEncoderImpl(writer: writer, depth: 0, id: 0, codingPath: path)
        }
        let slot = writer.push(.slot)
        return BusJSONEncoderImpl(writer: writer, depth: slot.depth, id: slot.id, codingPath: path)
    }

    private func openNested(_ kind: BusJSONWriter.Kind) -> (Int, UInt32) {
        do {
            try begin()
        } catch {
            return (0, 0)
        }
        return writer.open(kind)
    }
}

/// One value in its place.
struct BusJSONSingleValueEncoding: SingleValueEncodingContainer {
    let writer: BusJSONWriter
    let depth: Int
    let id: UInt32
    let codingPath: [any CodingKey]

    private func begin() throws {
        try writer.enter(depth, id)
        guard !writer.stack[depth].filled else {
            throw EncodingError.invalidValue((), EncodingError.Context(
                codingPath: codingPath, debugDescription: "A single value container was asked for a second value."))
        }
        writer.stack[depth].filled = true
    }

    mutating func encodeNil() throws { try begin(); writer.writeNull() }
    mutating func encode(_ value: Bool) throws { try begin(); writer.writeBool(value) }
    mutating func encode(_ value: String) throws { try begin(); writer.writeString(value) }
    mutating func encode(_ value: Double) throws { try begin(); try writer.writeDouble(value, path: codingPath) }
    mutating func encode(_ value: Float) throws { try begin(); try writer.writeFloat(value, path: codingPath) }
    mutating func encode(_ value: Int) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int8) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int16) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int32) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt8) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt16) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt32) throws { try begin(); writer.writeInteger(value) }
    mutating func encode(_ value: UInt64) throws { try begin(); writer.writeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try begin()
        try writer.encodeValue(value, path: codingPath)
    }
}

/// The keys BusJSON makes itself: `super`, and an array element's index.
struct BusJSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "\(intValue)"
        self.intValue = intValue
    }

    init(index: Int) {
        self.init(stringValue: "Index \(index)")
        intValue = index
    }

    static let `super` = BusJSONKey(stringValue: "super")
}
