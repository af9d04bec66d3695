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
    @usableFromInline private(set) var wire: [UInt8] = []
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

    /// The entries' size as NBP/1 encodes them (what they cost a buffer).
    @inlinable package var encodedByteCount: Int { wire.count }

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
