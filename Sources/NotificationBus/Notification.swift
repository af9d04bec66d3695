/// What a payload's bytes are, as the one-byte NBP/1 content-type code; unknown codes are kept, never rejected.
public struct ContentType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
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

/// A notification's small string headers, in wire order, with unique keys.
///
/// Backed by one array (one allocation however many entries), looked up linearly:
/// NBP/1 allows at most 32 entries.
public struct NotificationHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One key/value pair.
    public typealias Element = (key: String, value: String)

    private var storage: [Entry] = []

    /// Compared and hashed by UTF-8 bytes, as on the wire: Swift's `String ==` would merge
    /// canonically equivalent keys ("é" and "e\u{301}") that NBP/1 treats as distinct.
    struct Entry: Hashable, Sendable {
        var key: String
        var value: String

        static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.key.utf8.elementsEqual(rhs.key.utf8) && lhs.value.utf8.elementsEqual(rhs.value.utf8)
        }

        func hash(into hasher: inout Hasher) {
            for byte in key.utf8 { hasher.combine(byte) }
            hasher.combine(0xFF as UInt8)
            for byte in value.utf8 { hasher.combine(byte) }
        }
    }

    /// No headers.
    public init() {}

    /// Headers from pairs in order; a later duplicate key replaces the earlier value.
    public init(_ pairs: some Sequence<(String, String)>) {
        for (key, value) in pairs { self[key] = value }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    init(reservingCapacity capacity: Int) {
        storage.reserveCapacity(capacity)
    }

    /// Appends without a duplicate check (the decoder checks for duplicates itself).
    mutating func appendUnchecked(key: String, value: String) {
        storage.append(Entry(key: key, value: value))
    }

    /// The number of entries.
    public var count: Int { storage.count }

    /// Whether there are no entries.
    public var isEmpty: Bool { storage.isEmpty }

    /// The value for `key` (compared byte-wise), or nil; setting nil removes the entry, setting a new key appends it.
    public subscript(key: String) -> String? {
        get { storage.first(where: { $0.key.utf8.elementsEqual(key.utf8) })?.value }
        set {
            if let index = storage.firstIndex(where: { $0.key.utf8.elementsEqual(key.utf8) }) {
                if let newValue { storage[index].value = newValue } else { storage.remove(at: index) }
            } else if let newValue {
                storage.append(Entry(key: key, value: newValue))
            }
        }
    }

    public func makeIterator() -> some IteratorProtocol<Element> {
        storage.lazy.map { (key: $0.key, value: $0.value) }.makeIterator()
    }
}

/// One notification as it crosses the bus: a name, opaque payload bytes, small string headers,
/// and the publisher's stamp (publisher id, per-(publisher, name) sequence, publish time).
public struct Notification: Hashable, Sendable {
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
        name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = [:],
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
