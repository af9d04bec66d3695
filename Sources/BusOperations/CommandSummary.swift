/// The last thing a command writes: what it did, in one plain line for people or one JSON object
/// for scripts (docs/command-line.md lists the fields of each command).
///
/// Not a log line: a script reading `nbus publish: posted 3, sent 3, unsent 0` must not meet a
/// timestamp and a level in front, nor each number twice (once in the prose, once as a field).
/// It goes to standard error, through the log's sink so it never splits another line, and it is
/// the last line there.
package struct CommandSummary: Sendable {
    /// A field's value: JSON's types, numbers as numbers.
    package indirect enum Value: Sendable, Equatable {
        case integer(Int64)
        case unsigned(UInt64)
        case number(Double)
        case bool(Bool)
        case string(String)
        case object([(String, Value)])
        case array([Value])

        package static func == (lhs: Value, rhs: Value) -> Bool { lhs.json == rhs.json }

        /// The value as JSON text.
        package var json: String {
            switch self {
            case .integer(let value): return String(value)
            case .unsigned(let value): return String(value)
            case .number(let value): return value.isFinite ? "\(value)" : "null"
            case .bool(let value): return value ? "true" : "false"
            case .string(let text): return JSONString.quoted(text)
            case .object(let fields):
                return "{" + fields.map { JSONString.quoted($0.0) + ":" + $0.1.json }.joined(separator: ",") + "}"
            case .array(let values): return "[" + values.map(\.json).joined(separator: ",") + "]"
            }
        }
    }

    /// How the summary is written.
    package enum Format: String, Sendable, CaseIterable {
        /// `nbus COMMAND: ...`, the prose line.
        case text
        /// `{"summary":"COMMAND",...fields}`.
        case json
    }

    /// The command (`publish`), the JSON object's `summary` field and the text line's prefix.
    package let command: String
    /// The plain line for people, without the `nbus COMMAND: ` in front.
    package let text: String
    /// The fields of the JSON object, in the order written (after `summary`).
    package let fields: [(String, Value)]

    package init(command: String, text: String, fields: [(String, Value)]) {
        self.command = command
        self.text = text
        self.fields = fields
    }

    /// The summary as one line in `format`, without its newline.
    package func line(_ format: Format) -> String {
        switch format {
        case .text: "nbus \(command): \(text)"
        case .json: Value.object([("summary", .string(command))] + fields).json
        }
    }

    /// Writes the line to `sink` (standard error by default).
    package func write(_ format: Format, to sink: LogSink = .standardError) {
        sink.write(line(format) + "\n")
    }

    /// The format a command's summary takes: JSON when its output (`--format`) or its log
    /// (`--log-format`) is JSON, so a stream of JSON lines stays one; text otherwise.
    package static func format(output: Format?, log: LogFormat) -> Format {
        output ?? (log == .json ? .json : .text)
    }
}

extension CommandSummary.Value: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(stringLiteral value: String) { self = .string(value) }
}
