import Testing
@testable import NBP1

@Suite("Notification names and patterns")
struct NamePatternTests {
    @Test("Valid names are accepted", arguments: ["a", "orders.created", "café.订单", "a-b_c.d:e", "x.1.2.3"])
    func validNames(name: String) throws {
        #expect(try NotificationName(name).rawValue == name)
    }

    @Test(
        "Invalid names say what is wrong",
        arguments: [
            ("", NameError.empty),
            ("a..b", .emptyToken(byteOffset: 2)),
            (".a", .emptyToken(byteOffset: 0)),
            ("a.", .emptyToken(byteOffset: 2)),
            ("a b", .forbiddenByte(0x20, byteOffset: 1)),
            ("a\u{0}b", .forbiddenByte(0, byteOffset: 1)),
            ("a\tb", .forbiddenByte(0x09, byteOffset: 1)),
            ("orders.*", .wildcardInName(byteOffset: 7)),
            ("orders.>", .wildcardInName(byteOffset: 7)),
            ("ord*ers", .wildcardInName(byteOffset: 3)),
            (String(repeating: "a", count: 256), .tooLong(byteCount: 256)),
        ])
    func invalidNames(name: String, error: NameError) {
        #expect(throws: error) { try NotificationName(name) }
    }

    @Test("Names compare byte-wise: a copy, an equal name built apart, never a canonically equivalent one")
    func namesCompareByteWise() throws {
        // Long enough to live in heap storage, so the copy shares it (the same-storage shortcut).
        let name = NotificationName("orders.created.in-the-eu-warehouse")
        let copy = name
        #expect(copy == name)
        #expect(try NotificationName("orders.created.in-the-" + "eu-warehouse") == name)
        #expect(NotificationName("orders.created.in-the-eu-warehousf") != name)
        // "café" composed (NFC) and decomposed (NFD): equal as Swift strings, different bytes.
        let composed = try NotificationName("caf\u{E9}.\(String(repeating: "x", count: 20))")
        let decomposed = try NotificationName("cafe\u{301}.\(String(repeating: "x", count: 20))")
        #expect(composed.rawValue == decomposed.rawValue)
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
    }

    @Test("A 255-byte name is the longest accepted")
    func longestName() throws {
        #expect(try NotificationName(String(repeating: "a", count: 255)).rawValue.utf8.count == 255)
    }

    @Test(
        "Patterns match exactly the names they should",
        arguments: [
            ("orders.created", "orders.created", true),
            ("ab", "abc", false),
            ("abc", "ab", false),
            ("orders.*.eu", "orders.created.eu", true),
            ("orders.*.eu", "orders.created.us", false),
            ("orders.*.eu", "orders.eu", false),
            ("orders.*.eu", "orders.a.b.eu", false),
            ("a.*", "a.b", true),
            ("a.*", "a.b.c", false),
            ("a.*", "a", false),
            ("a.>", "a", false),
            ("a.>", "a.b", true),
            ("a.>", "a.b.c", true),
            ("a.>", "ab.c", false),
            (">", "anything.at.all", true),
            ("*", "one", true),
            ("*", "one.two", false),
            ("*.x", "a.x", true),
            ("*.*.c", "a.b.c", true),
            ("*.>", "a", false),
            ("*.>", "a.b", true),
            ("café.*", "café.订单", true),
        ])
    func patternMatching(pattern: String, name: String, expected: Bool) throws {
        #expect(try NamePattern(pattern).matches(try NotificationName(name)) == expected)
    }

    @Test(
        "Patterns compile to the longest literal ZeroMQ prefix",
        arguments: [
            ("orders.created", "orders.created\u{0}"),
            ("ab", "ab\u{0}"),
            ("orders.*.eu", "orders."),
            ("orders.>", "orders."),
            ("a.b.*", "a.b."),
            ("*.x", ""),
            (">", ""),
        ])
    func patternPrefix(pattern: String, prefix: String) throws {
        let compiled = try NamePattern(pattern)
        #expect(compiled.subscriptionPrefix == Array(prefix.utf8))
        #expect(compiled.isExact == prefix.hasSuffix("\u{0}"))
    }

    @Test(
        "Invalid patterns are rejected",
        arguments: [
            ("a*", NameError.misplacedWildcard(byteOffset: 1)),
            ("a.>.b", .restWildcardNotLast),
            ("a..b", .emptyToken(byteOffset: 2)),
            ("", .empty),
            ("a.b>", .misplacedWildcard(byteOffset: 3)),
            ("**", .misplacedWildcard(byteOffset: 0)),
        ])
    func invalidPatterns(pattern: String, error: NameError) {
        #expect(throws: error) { try NamePattern(pattern) }
    }

    @Test("An exact pattern's prefix never prefix-matches a longer name's frame")
    func exactPrefixIsNulTerminated() throws {
        let frame = try EnvelopeCodec.encode(BusNotification(name: NotificationName("abc")))
        let prefix = NamePattern("ab").subscriptionPrefix
        #expect(!frame.starts(with: prefix))
        #expect(frame.starts(with: NamePattern("abc").subscriptionPrefix))
    }
}

@Suite("UTF-8 validation")
struct UTF8ValidationTests {
    @Test(
        "Strict UTF-8 rules",
        arguments: [
            ([0x61], true), ([0xC3, 0xA9], true), ([0xE8, 0xAE, 0xA2], true), ([0xF0, 0x9F, 0x98, 0x80], true),
            ([0xC0, 0xAF], false), ([0xE0, 0x80, 0xAF], false), ([0xED, 0xA0, 0x80], false),
            ([0xF4, 0x90, 0x80, 0x80], false), ([0xFF], false), ([0xC3], false), ([0x80], false),
        ] as [([UInt8], Bool)])
    func strictRules(bytes: [UInt8], valid: Bool) {
        #expect(bytes.withUnsafeBytes { UTF8Validation.isValid($0) } == valid)
    }
}
