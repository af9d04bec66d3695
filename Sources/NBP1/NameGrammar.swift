/// The byte-level grammar shared by names, patterns and the decoder.
package enum NameGrammar {
    package static let maximumLength = 255
    package static let dot = UInt8(ascii: ".")
    package static let star = UInt8(ascii: "*")
    package static let greaterThan = UInt8(ascii: ">")

    /// Returns the first violation in `bytes` (already known to be UTF-8), or nil. With
    /// `allowWildcards`, whole-token `*` and a final whole-token `>` are accepted (pattern syntax).
    package static func check(_ bytes: UnsafeRawBufferPointer, allowWildcards: Bool) -> NameError? {
        let count = bytes.count
        if count == 0 { return .empty }
        if count > maximumLength { return .tooLong(byteCount: count) }
        var tokenStart = 0
        var index = 0
        while index <= count {
            if index == count || bytes[index] == dot {
                if index == tokenStart { return .emptyToken(byteOffset: index) }
                tokenStart = index + 1
                index += 1
                continue
            }
            let byte = bytes[index]
            if byte <= 0x20 || byte == 0x7F { return .forbiddenByte(byte, byteOffset: index) }
            if byte == star || byte == greaterThan {
                let tokenEnd = index + 1
                let wholeToken = index == tokenStart && (tokenEnd == count || bytes[tokenEnd] == dot)
                // A name (what is posted) names one thing: no wildcard at all, whole token or not.
                if !allowWildcards { return .wildcardInName(byteOffset: index) }
                if !wholeToken { return .misplacedWildcard(byteOffset: index) }
                if byte == greaterThan && tokenEnd != count { return .restWildcardNotLast }
            }
            index += 1
        }
        return nil
    }
}
