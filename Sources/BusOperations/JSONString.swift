/// The one JSON string escaper of the package: log lines (`BusLogHandler`'s JSON format and the
/// quoted values of its text format) and everything `nbus` prints as JSON or quotes on a terminal.
///
/// RFC 8259 requires only U+0000 to U+001F to be escaped. This escapes every control character:
/// C0, DEL (U+007F) and C1 (U+0080 to U+009F). All three are valid JSON either way, but the output
/// also reaches terminals, where U+009B is an 8-bit CSI (the start of an escape sequence) and U+0085
/// a line break, so a name or payload a peer chose must not carry them through unescaped.
package enum JSONString {
    /// Whether `scalar` is a control character: C0, DEL or C1.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped
    /// (`\n`, `\r`, `\t`, else `\u00XX`), every other character as UTF-8.
    package static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
