/// Strict UTF-8 validation over raw bytes, without allocating: no overlong forms,
/// no surrogates, nothing above U+10FFFF (the rules NBP/1 names for `invalidUTF8`).
package enum UTF8Validation {
    package static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            if bytes[index] < 0x80 {
                index += 1
                continue
            }
            guard let length = sequenceLength(bytes, at: index) else { return false }
            index += length
        }
        return true
    }

    /// The length (2 to 4) of the valid multi-byte sequence whose lead byte is at `index`, or nil
    /// when it is not one (a stray continuation byte, an overlong form, a surrogate, past
    /// U+10FFFF, or cut short by the end). An ASCII byte at `index` is not a multi-byte sequence.
    /// Inlinable: the JSON decoder's strings call it per character, on their own buffer type.
    @inlinable
    package static func sequenceLength<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at index: Bytes.Index) -> Int? {
        let lead = bytes[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard bytes.distance(from: index, to: bytes.endIndex) >= length else { return nil }
        let second = bytes[bytes.index(after: index)]
        guard second >= low && second <= high else { return nil }
        var offset = 2
        while offset < length {
            let next = bytes[bytes.index(index, offsetBy: offset)]
            guard next >= 0x80 && next <= 0xBF else { return nil }
            offset += 1
        }
        return length
    }
}
