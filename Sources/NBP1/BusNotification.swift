/// What a payload's bytes are, as the one-byte NBP/1 content-type code; unknown codes are kept, never rejected.
public struct ContentType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as it travels in the frame.
    public let rawValue: UInt8
    /// The content type with `rawValue` as its code, known or not.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0: unspecified, opaque bytes.
    public static let unspecified = ContentType(rawValue: 0)
    /// 1: `text/plain; charset=utf-8`.
    public static let text = ContentType(rawValue: 1)
    /// 2: `application/json`.
    public static let json = ContentType(rawValue: 2)
    /// 3: `application/cbor`.
    public static let cbor = ContentType(rawValue: 3)
    /// 4: `application/msgpack`.
    public static let msgpack = ContentType(rawValue: 4)
    /// 5: `application/x-protobuf`.
    public static let protobuf = ContentType(rawValue: 5)

    /// The names `nbus publish --content-type` takes and `nbus subscribe --format json` prints, by code.
    private static let names: [(name: String, type: ContentType)] = [
        ("unspecified", .unspecified), ("text", .text), ("json", .json), ("cbor", .cbor), ("msgpack", .msgpack),
        ("protobuf", .protobuf),
    ]

    /// The short name (`json`), or the code in decimal (`200`) for a code without one: a string
    /// `init(name:)` reads back, so JSON output keeps one type for the field.
    public var name: String {
        Self.names.first { $0.type == self }?.name ?? String(rawValue)
    }

    /// A content type by short name (`json`) or by code in decimal (`2`, `200`); nil for anything else.
    public init?(name: String) {
        if let named = Self.names.first(where: { $0.name == name }) {
            self = named.type
        } else if let code = UInt8(name) {
            self.init(rawValue: code)
        } else {
            return nil
        }
    }

    public var description: String {
        switch rawValue {
        case 0: return "unspecified"
        case 1: return "text/plain"
        case 2: return "application/json"
        case 3: return "application/cbor"
        case 4: return "application/msgpack"
        case 5: return "application/x-protobuf"
        case 128...: return "application-defined(\(rawValue))"
        default: return "reserved(\(rawValue))"
        }
    }
}

/// A notification's small string headers, in wire order, with unique keys (compared byte-wise).
///
/// Stored as the NBP/1 header map itself (`keyLength` u8, key, `valueLength` u16 BE, value,
/// repeated), so decoding copies the validated map in one allocation however many entries or
/// how long the strings, and encoding copies it back in one step. Lookups scan the bytes
/// (NBP/1 allows at most 32 entries) and make a `String` only for what is read.
public struct NotificationHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    /// One key/value pair.
    public typealias Element = (key: String, value: String)

    /// The entries in NBP/1 wire form.
    private(set) var wire: [UInt8] = []
    /// The number of entries.
    public private(set) var count = 0
    /// Entries that could not be stored in wire form at all (a key over 255 bytes or a value over
    /// 65535), by key bytes; encoding reports the first. Setting such a key again (or to nil)
    /// replaces or clears its record. Smaller excesses are caught by the encoder's limits.
    private var unrepresentableEntries: [(key: [UInt8], error: EncodeError)] = []

    /// Why these headers cannot be encoded at all, if an entry could not be stored.
    package var unrepresentable: EncodeError? { unrepresentableEntries.first?.error }

    /// No headers.
    public init() {}

    /// Headers from pairs in order; a later duplicate key replaces the earlier value.
    public init(_ pairs: some Sequence<(String, String)>) {
        for (key, value) in pairs { self[key] = value }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Wraps an already validated wire-form map (the decoder's path).
    package init(validatedWire wire: [UInt8], count: Int) {
        self.wire = wire
        self.count = count
    }

    /// Whether there are no entries.
    public var isEmpty: Bool { count == 0 }

    /// The value for `key` (compared byte-wise), or nil; setting nil removes the entry, setting a
    /// new key appends it, setting an existing key replaces its value in place. A key over 255
    /// bytes or a value over 65,535 cannot be stored at all: the entry is then absent and `post`
    /// throws saying why, until the key is set to something else or to nil.
    public subscript(key: String) -> String? {
        get {
            guard let entry = find(key) else { return nil }
            return String(decoding: wire[entry.value], as: UTF8.self)
        }
        set {
            let existing = find(key)
            if let existing {
                wire.removeSubrange(existing.whole)
                count -= 1
            }
            let keyBytes = Array(key.utf8)
            if !unrepresentableEntries.isEmpty { unrepresentableEntries.removeAll { $0.key == keyBytes } }
            guard let newValue else { return }
            let valueBytes = Array(newValue.utf8)
            guard keyBytes.count <= Int(UInt8.max), valueBytes.count <= Int(UInt16.max) else {
                // Not stored; remembered so that encoding fails and says why, until the key is set
                // to something representable or removed.
                let error: EncodeError =
                    keyBytes.count > Int(UInt8.max)
                    ? .invalidHeaderKey(key) : .headerValueTooLong(key: key, byteCount: valueBytes.count)
                unrepresentableEntries.append((keyBytes, error))
                return
            }
            var entry: [UInt8] = [UInt8(keyBytes.count)]
            entry += keyBytes
            entry += [UInt8(valueBytes.count >> 8), UInt8(valueBytes.count & 0xFF)]
            entry += valueBytes
            wire.insert(contentsOf: entry, at: existing?.whole.lowerBound ?? wire.endIndex)
            count += 1
        }
    }

    private struct EntryRanges {
        var whole: Range<Int>
        var key: Range<Int>
        var value: Range<Int>
    }

    private func entryRanges(at start: Int) -> EntryRanges {
        Self.entryRanges(in: wire, at: start)
    }

    private static func entryRanges(in wire: [UInt8], at start: Int) -> EntryRanges {
        let keyCount = Int(wire[start])
        let keyStart = start + 1
        let valueLengthStart = keyStart + keyCount
        let valueCount = Int(wire[valueLengthStart]) << 8 | Int(wire[valueLengthStart + 1])
        let valueStart = valueLengthStart + 2
        return EntryRanges(
            whole: start..<(valueStart + valueCount), key: keyStart..<valueLengthStart,
            value: valueStart..<(valueStart + valueCount))
    }

    private func find(_ key: String) -> EntryRanges? {
        var position = 0
        while position < wire.count {
            let entry = entryRanges(at: position)
            if wire[entry.key].elementsEqual(key.utf8) { return entry }
            position = entry.whole.upperBound
        }
        return nil
    }

    /// Visits the raw key and value bytes of each entry, in order.
    package func forEachEntry(_ body: (ArraySlice<UInt8>, ArraySlice<UInt8>) throws(EncodeError) -> Void) throws(EncodeError) {
        var position = 0
        while position < wire.count {
            let entry = entryRanges(at: position)
            try body(wire[entry.key], wire[entry.value])
            position = entry.whole.upperBound
        }
    }

    public func makeIterator() -> AnyIterator<Element> {
        var position = 0
        let wire = self.wire
        return AnyIterator {
            guard position < wire.count else { return nil }
            let entry = Self.entryRanges(in: wire, at: position)
            position = entry.whole.upperBound
            return (String(decoding: wire[entry.key], as: UTF8.self), String(decoding: wire[entry.value], as: UTF8.self))
        }
    }

    public var description: String {
        "[" + map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + "]"
    }

    public static func == (lhs: NotificationHeaders, rhs: NotificationHeaders) -> Bool {
        lhs.wire == rhs.wire
            && lhs.unrepresentableEntries.elementsEqual(rhs.unrepresentableEntries) { $0.key == $1.key && $0.error == $1.error }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(wire)
    }
}

/// One notification as it crosses the bus: a name, opaque payload bytes, small string headers,
/// and the publisher's stamp (publisher id, per-(publisher, name) sequence, publish time).
/// Not `Notification`, so a file that imports Foundation too can name it unqualified.
public struct BusNotification: Hashable, Sendable {
    /// What happened, e.g. `orders.created`.
    public var name: NotificationName
    /// The payload, opaque to the bus.
    public var payload: [UInt8]
    /// Small string metadata (at most 32 entries; keys 1-64 bytes, values up to 1024 bytes).
    public var headers: NotificationHeaders
    /// What the payload's bytes are.
    public var contentType: ContentType
    /// 1 for the first notification of this name from this publisher, then +1 each.
    public var sequence: UInt64
    /// The publisher's random id, new on every publisher start.
    public var publisherID: UInt64
    /// Publish time in nanoseconds since the Unix epoch (UTC).
    public var timestamp: UInt64
    /// NBP/1 flag bits as received (all reserved in version 1).
    public var flags: UInt8

    /// Creates a notification; the bus fills in `sequence`, `publisherID` and `timestamp` when posting.
    public init(
        name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified, sequence: UInt64 = 0, publisherID: UInt64 = 0,
        timestamp: UInt64 = 0, flags: UInt8 = 0
    ) {
        self.name = name
        self.payload = payload
        self.headers = headers
        self.contentType = contentType
        self.sequence = sequence
        self.publisherID = publisherID
        self.timestamp = timestamp
        self.flags = flags
    }
}
