import Foundation

/// Number formatting shared by the reports and the CLI's progress display.
package enum Format {
    /// A rate with k/M suffixes: `1.28M`, `939k`.
    package static func rate(_ value: Double) -> String {
        if value >= 1_000_000 { return String(format: "%.2fM", value / 1_000_000) }
        if value >= 1_000 { return String(format: "%.0fk", value / 1_000) }
        return String(format: "%.0f", value)
    }

    /// An integer with thousands separators: `1,000,000`.
    package static func count(_ value: Int) -> String {
        let digits = Array(String(value))
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return out
    }

    /// A duration in ns, us, ms or s, whichever reads best.
    static func nanoseconds(_ value: Double) -> String {
        if value >= 1_000_000_000 { return String(format: "%.2f s", value / 1e9) }
        if value >= 1_000_000 { return String(format: "%.2f ms", value / 1e6) }
        if value >= 1_000 { return String(format: "%.1f us", value / 1e3) }
        return String(format: "%.0f ns", value)
    }

    /// A duration (given in ns) in the unit a person reads: `38 µs`, `1.4 ms`, `250 ms`, `12.1 s`.
    package static func duration(_ nanoseconds: Double) -> String {
        let value = max(0, nanoseconds)
        if value >= 1e9 { return String(format: value >= 1e11 ? "%.0f s" : "%.1f s", value / 1e9) }
        if value >= 1e6 { return String(format: value >= 1e7 ? "%.0f ms" : "%.1f ms", value / 1e6) }
        if value >= 1e3 { return String(format: "%.0f µs", value / 1e3) }
        if value == 0 { return "0" }
        return String(format: "%.2f µs", value / 1e3)
    }

    /// One line of a report table: the label padded to `labelWidth` columns, the value right-aligned
    /// in 14, then the note.
    static func row(_ label: String, _ value: String, _ note: String = "", labelWidth: Int) -> String {
        let padded = label.padding(toLength: max(label.count, labelWidth), withPad: " ", startingAt: 0)
        let value = String(repeating: " ", count: max(0, 14 - value.count)) + value
        return note.isEmpty ? padded + value : padded + value + "   " + note
    }
}

/// The one JSON form of every report and worker line: sorted keys, unescaped slashes, ISO 8601
/// dates, and non-finite numbers as strings rather than an encoding error.
enum ReportJSON {
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
