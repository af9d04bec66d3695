import Foundation
import NotificationBus
import Testing

/// `BusJSON`, the typed API's default coding: it round-trips every kind of `Codable` value, reads
/// what Foundation's `JSONEncoder` writes and writes what Foundation's `JSONDecoder` reads, and
/// refuses malformed JSON with a `DecodingError` (never a crash).
@Suite("BusJSON coding", .timeLimit(.minutes(1)))
struct BusJSONTests {
    struct Inner: Codable, Equatable {
        var label: String
        var weight: Double?
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case polygon([Int], name: String)
        case none
    }

    enum Color: String, Codable { case red, green }

    struct Everything: Codable, Equatable {
        var int = Int.min
        var intMax = Int.max
        var int8 = Int8.min
        var int16 = Int16.max
        var int32 = Int32.min
        var int64 = Int64.max
        var uint = UInt.max
        var uint8 = UInt8.max
        var uint16 = UInt16.max
        var uint32 = UInt32.max
        var uint64 = UInt64.max
        var doubles = [0.1, 9.5, 10.0, -0.0, 1e20, 1e-7, 5e-324, 1.7976931348623157e308, 123456789.125, -2.5e-300]
        var float: Float = 3.14159
        var bool = true
        var text = "quote \" backslash \\ slash / tab \t newline \n nul \u{0} unit \u{1F} é 中文 😀"
        var empty = ""
        var missing: String? = nil
        var present: Int? = 7
        var nested = Inner(label: "in", weight: nil)
        var list = [Inner(label: "a", weight: 1.5), Inner(label: "b", weight: nil)]
        var matrix: [[Int]] = [[1, 2], [], [3]]
        var map: [String: Int] = ["one": 1, "two": 2]
        var intMap: [Int: String] = [1: "x", 20: "y"]
        var optionals: [Int?] = [1, nil, 3]
        var date = Date(timeIntervalSinceReferenceDate: 786_000_123.25)
        var data = Data([0, 1, 2, 250, 255])
        var url = URL(string: "https://example.com/a/b?q=1#f")!
        var decimal = Decimal(string: "12345.6789")!
        var color = Color.green
        var shapes: [Shape] = [.circle(radius: 2), .polygon([1, 2, 3], name: "tri"), .none]
    }

    @Test("Every kind of value round-trips")
    func roundTrip() throws {
        let value = Everything()
        let bytes = try BusJSON.encode(value)
        #expect(try BusJSON.decode(Everything.self, from: bytes) == value)
    }

    @Test("What BusJSON writes, Foundation's JSONDecoder reads; what JSONEncoder writes, BusJSON reads")
    func crossCheckWithFoundation() throws {
        let value = Everything()
        let ours = try BusJSON.encode(value)
        #expect(try JSONDecoder().decode(Everything.self, from: Data(ours)) == value)

        for formatting: JSONEncoder.OutputFormatting in [[], [.sortedKeys], [.prettyPrinted], [.withoutEscapingSlashes]] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = formatting
            let theirs = Array(try encoder.encode(value))
            #expect(try BusJSON.decode(Everything.self, from: theirs) == value, "\(formatting)")
        }
    }

    @Test("Scalars, strings and arrays are written byte for byte as Foundation's JSONEncoder writes them")
    func sameBytesAsFoundation() throws {
        let encoder = JSONEncoder()
        func check<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let foundation = String(decoding: try encoder.encode(value), as: UTF8.self)
            #expect(String(decoding: try BusJSON.encode(value), as: UTF8.self) == foundation, sourceLocation: sourceLocation)
        }
        try check([0.1, 9.5, 10.0, -0.0, 1e20, 1e-7, 123456789.125, 0.30000000000000004])
        try check([Int.min, -1, 0, 7, Int.max])
        try check("a/b \"c\" \\ \n\r\t é 😀")
        encoder.outputFormatting = [.sortedKeys]  // Foundation's own key order follows a hash
        try check(Inner(label: "x", weight: 2))  // declaration order is sorted order here
        try check(Data([1, 2, 3]))
        try check(Date(timeIntervalSinceReferenceDate: 12.5))
        try check(URL(string: "https://example.com/x")!)
        try check(Decimal(string: "-1.25")!)
    }

    @Test("Keys come in declaration order, so the same value makes the same bytes")
    func declarationOrder() throws {
        struct Order: Codable { var zeta = 1; var alpha = "a"; var mid = false }
        #expect(String(decoding: try BusJSON.encode(Order()), as: UTF8.self) == #"{"zeta":1,"alpha":"a","mid":false}"#)
    }

    @Test("Doubles round-trip exactly, through both coders")
    func doublesRoundTrip() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var values: [Double] = [.leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, .ulpOfOne, 1 / 3, 2.0 / 3]
        while values.count < 2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let value = Double(bitPattern: state)
            if value.isFinite { values.append(value) }
        }
        let bytes = try BusJSON.encode(values)
        #expect(try BusJSON.decode([Double].self, from: bytes) == values)
        #expect(try JSONDecoder().decode([Double].self, from: Data(bytes)) == values)
        #expect(try BusJSON.decode([Double].self, from: Array(try JSONEncoder().encode(values))) == values)
    }

    @Test("A non-finite number is refused with a clear error")
    func nonFinite() throws {
        for value in [Double.nan, .infinity, -.infinity] {
            #expect {
                try BusJSON.encode(Inner(label: "x", weight: value))
            } throws: { error in
                guard case EncodingError.invalidValue(_, let context) = error else { return false }
                return context.codingPath.map(\.stringValue) == ["weight"] && context.debugDescription.contains("JSON")
            }
        }
        #expect(throws: EncodingError.self) { try BusJSON.encode([Float.nan]) }
    }

    final class Base: Codable {
        var id: Int
        init(id: Int) { self.id = id }
    }

    /// A subclass that encodes its superclass through `superEncoder()`.
    final class Derived: Codable, Equatable {
        var base: Base
        var name: String
        enum CodingKeys: String, CodingKey { case name }
        init(id: Int, name: String) { base = Base(id: id); self.name = name }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            base = try Base(from: container.superDecoder())
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try base.encode(to: container.superEncoder())
        }
        static func == (lhs: Derived, rhs: Derived) -> Bool { lhs.base.id == rhs.base.id && lhs.name == rhs.name }
    }

    /// Two containers of one encoder: a type that encodes its parts into the same object.
    struct Shared: Codable, Equatable {
        var a: Int
        var b: String
        enum A: String, CodingKey { case a }
        enum B: String, CodingKey { case b }
        init(a: Int, b: String) { self.a = a; self.b = b }
        init(from decoder: any Decoder) throws {
            a = try decoder.container(keyedBy: A.self).decode(Int.self, forKey: .a)
            b = try decoder.container(keyedBy: B.self).decode(String.self, forKey: .b)
        }
        func encode(to encoder: any Encoder) throws {
            var first = encoder.container(keyedBy: A.self)
            try first.encode(a, forKey: .a)
            var second = encoder.container(keyedBy: B.self)
            try second.encode(b, forKey: .b)
        }
    }

    /// Writes into a nested container after its parent moved on: legal `Codable`, not one pass.
    struct OutOfOrder: Codable, Equatable {
        var x: Int
        var y: Int
        enum Keys: String, CodingKey { case inner, y }
        enum InnerKeys: String, CodingKey { case x }
        init(x: Int, y: Int) { self.x = x; self.y = y }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            x = try container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner).decode(Int.self, forKey: .x)
            y = try container.decode(Int.self, forKey: .y)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var inner = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
            try container.encode(y, forKey: .y)
            try inner.encode(x, forKey: .x)
        }
    }

    @Test("superEncoder, shared containers and out-of-order containers encode what Foundation reads")
    func unusualEncoders() throws {
        let derived = Derived(id: 3, name: "d")
        let derivedBytes = try BusJSON.encode(derived)
        #expect(String(decoding: derivedBytes, as: UTF8.self) == #"{"name":"d","super":{"id":3}}"#)
        #expect(try BusJSON.decode(Derived.self, from: derivedBytes) == derived)
        #expect(try JSONDecoder().decode(Derived.self, from: Data(derivedBytes)) == derived)

        let shared = Shared(a: 1, b: "two")
        #expect(String(decoding: try BusJSON.encode(shared), as: UTF8.self) == #"{"a":1,"b":"two"}"#)
        #expect(try BusJSON.decode(Shared.self, from: try BusJSON.encode(shared)) == shared)

        let outOfOrder = OutOfOrder(x: 1, y: 2)
        let bytes = try BusJSON.encode(outOfOrder)
        #expect(try JSONDecoder().decode(OutOfOrder.self, from: Data(bytes)) == outOfOrder)
        #expect(try BusJSON.decode(OutOfOrder.self, from: bytes) == outOfOrder)
    }

    @Test("Malformed JSON is a DecodingError, never a crash", arguments: [
        "", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}", "{a:1}", "{\"a\":1 \"b\":2}",
        "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"",
        "01", "1.", "-", "1e", "1e+", ".5", "+1", "tru", "nul", "falsey", "[1] x", "NaN", "Infinity", "// c\n1",
        "\"tab\there\"", "{\"a\":1}}", "[1]]", "'single'",
    ])
    func malformedText(_ text: String) {
        #expect(throws: DecodingError.self) { try BusJSON.decode([String: Int].self, from: Array(text.utf8)) }
    }

    @Test("Invalid UTF-8 in a string is a DecodingError", arguments: [
        [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
        [0xFF], [0x80], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3, 0x28],
    ] as [[UInt8]])
    func invalidUTF8(_ sequence: [UInt8]) {
        let bytes = [UInt8(ascii: "\"")] + sequence + [UInt8(ascii: "\"")]
        #expect(throws: DecodingError.self) { try BusJSON.decode(String.self, from: bytes) }
    }

    @Test("Escapes and valid UTF-8 decode to the same string as Foundation's")
    func escapes() throws {
        let text = #""a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u4e2d\ud83d\ude00 é 😀""#
        let expected = try JSONDecoder().decode(String.self, from: Data(text.utf8))
        #expect(try BusJSON.decode(String.self, from: Array(text.utf8)) == expected)
        #expect(expected == "a\"b\\c/d\u{8}\u{C}\n\r\tAé中😀 é 😀")
    }

    @Test("Nesting is read to 128 levels and refused beyond")
    func nesting() throws {
        struct Any128: Decodable {
            init(from decoder: any Decoder) throws {}
        }
        let deepest = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        #expect(throws: Never.self) { try BusJSON.decode(Any128.self, from: Array(deepest.utf8)) }
        let tooDeep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        #expect(throws: DecodingError.self) { try BusJSON.decode(Any128.self, from: Array(tooDeep.utf8)) }
        let hostile = String(repeating: "{\"a\":", count: 100_000)
        #expect(throws: DecodingError.self) { try BusJSON.decode(Any128.self, from: Array(hostile.utf8)) }
    }

    @Test("Numbers that do not fit the type are errors; exact ones of another form are read")
    func numbers() throws {
        #expect(throws: DecodingError.self) { try BusJSON.decode(Double.self, from: Array("1e400".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(Float.self, from: Array("1e50".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(Int.self, from: Array("9223372036854775808".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(Int.self, from: Array("-9223372036854775809".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(UInt.self, from: Array("-1".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(Int.self, from: Array("1.5".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(Int8.self, from: Array("128".utf8)) }
        #expect(throws: DecodingError.self) { try BusJSON.decode(Int.self, from: Array(String(repeating: "9", count: 5_000).utf8)) }
        #expect(try BusJSON.decode(Int.self, from: Array("9223372036854775807".utf8)) == .max)
        #expect(try BusJSON.decode(Int.self, from: Array("-9223372036854775808".utf8)) == .min)
        #expect(try BusJSON.decode(UInt64.self, from: Array("18446744073709551615".utf8)) == .max)
        #expect(try BusJSON.decode(Int.self, from: Array("1e2".utf8)) == 100)
        #expect(try BusJSON.decode(UInt.self, from: Array("-0".utf8)) == 0)
        #expect(try BusJSON.decode(Double.self, from: Array("1e-400".utf8)) == 0)
        #expect(try BusJSON.decode(Double.self, from: Array("12345678901234567890".utf8)) == 12345678901234567890.0)
        #expect(try BusJSON.decode(Double.self, from: Array("0.1".utf8)) == 0.1)
        #expect(try BusJSON.decode(Double.self, from: Array("-0.0".utf8)).sign == .minus)
        #expect(try BusJSON.decode(Decimal.self, from: Array("3.14159265358979323846".utf8)) == Decimal(string: "3.14159265358979323846"))
    }

    @Test("A value of the wrong shape is a DecodingError with its coding path")
    func codingPaths() throws {
        struct Outer: Codable { var list: [Inner] }
        let wrongType = #"{"list":[{"label":"a"},{"label":5}]}"#
        #expect {
            try BusJSON.decode(Outer.self, from: Array(wrongType.utf8))
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["list", "Index 1", "label"]
        }
        let missing = #"{"list":[{"weight":1}]}"#
        #expect {
            try BusJSON.decode(Outer.self, from: Array(missing.utf8))
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, let context) = error else { return false }
            return key.stringValue == "label" && context.codingPath.map(\.stringValue) == ["list", "Index 0"]
        }
        let null = #"{"list":null}"#
        #expect {
            try BusJSON.decode(Outer.self, from: Array(null.utf8))
        } throws: { error in
            guard case DecodingError.valueNotFound = error else { return false }
            return true
        }
        // Unknown members and whitespace are fine; escaped keys are matched by their value.
        let extra = " { \"li\\u0073t\" : [ { \"label\" : \"a\" , \"x\" : [1,{\"y\":null}] } ] , \"other\": true } "
        #expect(try BusJSON.decode(Outer.self, from: Array(extra.utf8)).list == [Inner(label: "a", weight: nil)])
    }

    @Test("Every truncation and every one-byte corruption of a document is an error or a value, never a crash")
    func truncationsAndCorruptions() throws {
        let bytes = try BusJSON.encode(Everything())
        for length in 0..<bytes.count {
            #expect(throws: DecodingError.self) { try BusJSON.decode(Everything.self, from: Array(bytes[..<length])) }
        }
        var corrupted = 0
        for index in bytes.indices {
            for replacement: UInt8 in [0x00, 0x22, 0x5C, 0x7B, 0x5D, 0x2C, 0xFF, 0x31] where bytes[index] != replacement {
                var copy = bytes
                copy[index] = replacement
                if (try? BusJSON.decode(Everything.self, from: copy)) == nil { corrupted += 1 }
            }
        }
        #expect(corrupted > bytes.count)
    }

    @Test("A special byte at every offset of a long string is written and read as Foundation does (word-at-a-time scans)")
    func stringScans() throws {
        for special in ["\"", "\\", "/", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "中", "😀"] {
            for offset in 0..<20 {
                let text = String(repeating: "a", count: offset) + special + String(repeating: "b", count: 19 - offset)
                let written = try BusJSON.encode(text)
                #expect(written == Array(try JSONEncoder().encode(text)), "\(offset) \(special.unicodeScalars.map(\.value))")
                #expect(try BusJSON.decode(String.self, from: written) == text)
                #expect(try JSONDecoder().decode(String.self, from: Data(written)) == text)
            }
        }
        // Refused wherever they stand in a long string: a raw control character, invalid UTF-8.
        for bad: [UInt8] in [[0x0A], [0x00], [0x1F], [0xFF], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xE2, 0x82]] {
            for offset in 0..<20 {
                let bytes = [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: "a"), count: offset) + bad
                    + Array(repeating: UInt8(ascii: "b"), count: 19 - offset) + [UInt8(ascii: "\"")]
                #expect(throws: DecodingError.self) { try BusJSON.decode(String.self, from: bytes) }
            }
        }
        // A string that ends where a word would: unterminated at every length.
        for length in 0..<24 {
            let bytes = [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: "a"), count: length)
            #expect(throws: DecodingError.self) { try BusJSON.decode(String.self, from: bytes) }
        }
    }

    @Test("Large documents: the reader's entries and the writer's buffer grow, the bytes stay Foundation's")
    func largeDocuments() throws {
        let numbers = Array(-1_500...1_500)
        let strings = (0..<300).map { "item \($0) \"quoted\" / \($0 % 7 == 0 ? "é" : "")" }
        let nested = (0..<100).map { [$0, $0 * 2] }
        let numbersJSON = try BusJSON.encode(numbers)
        #expect(numbersJSON == Array(try JSONEncoder().encode(numbers)))
        #expect(try BusJSON.decode([Int].self, from: numbersJSON) == numbers)
        let stringsJSON = try BusJSON.encode(strings)
        #expect(stringsJSON == Array(try JSONEncoder().encode(strings)))
        #expect(try BusJSON.decode([String].self, from: stringsJSON) == strings)
        let nestedJSON = try BusJSON.encode(nested)
        #expect(nestedJSON == Array(try JSONEncoder().encode(nested)))
        #expect(try BusJSON.decode([[Int]].self, from: nestedJSON) == nested)
        // An object of many members: every one found.
        let map = Dictionary(uniqueKeysWithValues: (0..<500).map { ("key\($0)", $0) })
        #expect(try BusJSON.decode([String: Int].self, from: try BusJSON.encode(map)) == map)
        #expect(try BusJSON.decode([String: Int].self, from: Array(try JSONEncoder().encode(map))) == map)
    }

    @Test("A duplicate key: the first member of that name is read, as before")
    func duplicateKeys() throws {
        struct One: Codable, Equatable { var a: Int; var b: String }
        let text = #"{"a":1,"b":"x","a":2,"b":"y"}"#
        #expect(try BusJSON.decode(One.self, from: Array(text.utf8)) == One(a: 1, b: "x"))
        let escaped = #"{"\u0061":3,"a":4,"b":"z"}"#
        #expect(try BusJSON.decode(One.self, from: Array(escaped.utf8)) == One(a: 3, b: "z"))
    }

    /// A struct whose keys are read in declaration order: what the in-order look-up serves.
    struct Ordered: Codable, Equatable {
        var id: Int
        var total: Double
        var customer: String
        var items: [String]
        var express: Bool
        var note: String?
        var inner: Inner?
    }

    /// Reads keys out of declaration order, twice, and asks `contains` between.
    struct Revisits: Decodable, Equatable {
        var a: Int, b: Int, c: Int, again: Int, hasD: Bool
        enum CodingKeys: String, CodingKey { case a, b, c, d }
        init(a: Int, b: Int, c: Int, again: Int, hasD: Bool) {
            (self.a, self.b, self.c, self.again, self.hasD) = (a, b, c, again, hasD)
        }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            c = try container.decode(Int.self, forKey: .c)
            a = try container.decode(Int.self, forKey: .a)
            hasD = container.contains(.d)
            b = try container.decode(Int.self, forKey: .b)
            again = try container.decode(Int.self, forKey: .a)
        }
    }

    @Test("Keys in any order, missing, repeated, unknown or nested: read as Foundation's JSONDecoder reads them")
    func keyOrderAndLookUp() throws {
        func both<T: Decodable & Equatable>(_ type: T.Type, _ text: String) throws -> T {
            let ours = try BusJSON.decode(type, from: Array(text.utf8))
            #expect(try JSONDecoder().decode(type, from: Data(text.utf8)) == ours, "\(text)")
            return ours
        }
        let inOrder = Ordered(id: 7, total: 9.5, customer: "Acme", items: ["w", "g"], express: true, note: nil, inner: nil)
        // Declaration order, as BusJSON writes it.
        #expect(try BusJSON.decode(Ordered.self, from: try BusJSON.encode(inOrder)) == inOrder)
        #expect(try both(Ordered.self, #"{"id":7,"total":9.5,"customer":"Acme","items":["w","g"],"express":true}"#) == inOrder)
        // Reversed, shuffled, with unknown keys between and around.
        #expect(try both(Ordered.self, #"{"express":true,"items":["w","g"],"customer":"Acme","total":9.5,"id":7}"#) == inOrder)
        #expect(try both(Ordered.self, #"{"x":1,"total":9.5,"zz":{"id":3},"id":7,"express":true,"customer":"Acme","y":[1],"items":["w","g"]}"#) == inOrder)
        // Optional members present, out of order, nested objects with keys of the outer one's names.
        let nested = try both(Ordered.self,
            #"{"inner":{"label":"id","weight":2},"id":7,"note":"n","total":9.5,"customer":"Acme","items":["w","g"],"express":true}"#)
        #expect(nested.inner == Inner(label: "id", weight: 2))
        #expect(nested.note == "n")
        let list = try both([Ordered].self, #"[{"id":1,"total":1,"customer":"a","items":[],"express":false},"#
            + #"{"customer":"b","id":2,"total":2,"items":["x"],"express":true,"note":null}]"#)
        #expect(list.map(\.id) == [1, 2])
        #expect(list.map(\.customer) == ["a", "b"])
        // A missing key: keyNotFound, at the same key.
        for text in [#"{"id":7,"total":9.5,"customer":"Acme","express":true}"#, #"{"items":[],"id":7,"total":9.5,"customer":"Acme"}"#, "{}"] {
            #expect(throws: DecodingError.self) { try BusJSON.decode(Ordered.self, from: Array(text.utf8)) }
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(Ordered.self, from: Data(text.utf8)) }
        }
        do {
            _ = try BusJSON.decode(Ordered.self, from: Array(#"{"id":7,"total":9.5,"customer":"Acme","express":true}"#.utf8))
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "items")
        }
        // Keys read out of order and again, and `contains` between: the same values each time.
        let expected = Revisits(a: 1, b: 2, c: 3, again: 1, hasD: true)
        #expect(try both(Revisits.self, #"{"a":1,"b":2,"c":3,"d":4}"#) == expected)
        #expect(try both(Revisits.self, #"{"d":4,"c":3,"b":2,"a":1}"#) == expected)
        #expect(try both(Revisits.self, #"{"c":3,"a":1,"b":2,"e":5}"#) == Revisits(a: 1, b: 2, c: 3, again: 1, hasD: false))
        // A repeated key (BusJSON reads the first, as before) read out of order and again, and
        // keys that share a length and end bytes without being the same (the sieve's near misses).
        #expect(try BusJSON.decode(Revisits.self, from: Array(#"{"a":1,"b":2,"a":9,"c":3,"d":0}"#.utf8)) == expected)
        #expect(try BusJSON.decode(Revisits.self, from: Array(#"{"c":3,"a":1,"a":8,"b":2,"a":9}"#.utf8))
            == Revisits(a: 1, b: 2, c: 3, again: 1, hasD: false))
        struct Near: Codable, Equatable { var ab: Int; var aab: Int; var axb: Int; var ayb: Int; var b: Int }
        let near = Near(ab: 1, aab: 2, axb: 3, ayb: 4, b: 5)
        #expect(try both(Near.self, #"{"ab":1,"aab":2,"axb":3,"ayb":4,"b":5}"#) == near)
        #expect(try both(Near.self, #"{"b":5,"ayb":4,"axb":3,"aab":2,"ab":1}"#) == near)
        #expect(try BusJSON.decode(Near.self, from: Array(#"{"ab":1,"aab":2,"axb":3,"ayb":4,"b":5,"axb":30}"#.utf8)) == near)
        #expect(try BusJSON.decode(Near.self, from: Array(#"{"ab":1,"aab":2,"a\u0078b":3,"ayb":4,"b":5,"axb":30}"#.utf8)) == near)
        // Many members (more than the sieve's 64 bits), each found in order and reversed.
        let keys = (0..<150).map { "k\($0)" }
        let forward = "{" + keys.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
        let backward = "{" + keys.enumerated().reversed().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
        let map = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        #expect(try both([String: Int].self, forward) == map)
        #expect(try both([String: Int].self, backward) == map)
    }

    @Test("Doubles with few fraction digits (written without their description) are Foundation's bytes")
    func shortDecimalDoubles() throws {
        var values: [Double] = [9.5, 0.1, 0.2, 0.3, 1.1, 2.675, 1.005, 4.35, 0.07, 0.001, 0.0011, 0.00099, 0.0001,
                                999_999_999.9999, 999_999_999.99999, 1e9, 1e9 - 1, 123_456.789, -0.25, -12, 12.0, 1 / 3.0,
                                0, -0.0, 0.5, 0.05, 0.005, 0.0005, 1e-7, 1e15, 1e16, 2.5e-300]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let fractionDigits = Int.random(in: 0...6, using: &generator)
            let digits = Double(Int64.random(in: -10_000_000_000...10_000_000_000, using: &generator) / Int64.random(in: 1...100_000, using: &generator))
            let scaled = digits / [1, 10, 100, 1e3, 1e4, 1e5, 1e6][fractionDigits]
            values += [scaled, scaled.nextUp, scaled.nextDown, Double.random(in: -1e9...1e9, using: &generator),
                       Double.random(in: -2...2, using: &generator)]
        }
        for digits in 1...2_000 {
            for scale in [1.0, 10, 100, 1_000, 10_000] { values += [Double(digits) / scale, -Double(digits) / scale] }
        }
        let ours = try BusJSON.encode(values)
        #expect(ours == Array(try JSONEncoder().encode(values)))
        #expect(try BusJSON.decode([Double].self, from: ours).elementsEqual(values) { $0 == $1 })
    }
}
