import BusOperations
import Foundation
import Logging
import Testing

@Suite("JSONString: the one JSON string escaper (logs and nbus output)")
struct JSONStringTests {
    @Test("C0, DEL and C1 control characters are escaped; the rest passes as UTF-8")
    func controlCharacters() {
        #expect(JSONString.quoted("a\"b\\c") == #""a\"b\\c""#)
        #expect(JSONString.quoted("\n\r\t") == #""\n\r\t""#)
        #expect(JSONString.quoted("\u{0}\u{1B}\u{1F}") == #""\u0000\u001b\u001f""#)
        // DEL and the C1 range: U+0085 is a line break and U+009B a terminal's 8-bit CSI.
        #expect(JSONString.quoted("\u{7F}\u{80}\u{85}\u{9B}\u{9F}") == #""\u007f\u0080\u0085\u009b\u009f""#)
        // Just outside the ranges: space, tilde, NBSP, and characters beyond the BMP stay as they are.
        #expect(JSONString.quoted(" ~\u{A0}é😀") == "\" ~\u{A0}é😀\"")
        #expect(!JSONString.isControl(" ") && !JSONString.isControl("\u{A0}") && JSONString.isControl("\u{9F}"))
    }

    @Test("what it writes parses back as the same string")
    func roundTrip() throws {
        let text = (0..<0x200).compactMap(Unicode.Scalar.init).map(String.init).joined() + "😀"
        let data = Data(("[" + JSONString.quoted(text) + "]").utf8)
        let parsed = try #require(try JSONSerialization.jsonObject(with: data) as? [String])
        #expect(parsed == [text])
    }

    @Test("log lines escape a C1 control character too, in the message and in a field")
    func logLines() {
        let line = BusLogHandler.render(
            format: .text, timestamp: "T", level: .info, label: "l", message: "a\u{9B}31mb",
            fields: ["k": "x\u{85}y"])
        #expect(line == #"T info l: a\u009b31mb k="x\u0085y""#)
    }
}
