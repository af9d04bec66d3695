#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// A swift-log handler that writes every line of a process in one format to standard error: the
/// project's lines and those of the libraries it uses (swift-service-lifecycle's among them), once
/// `LoggingSystem.bootstrap` has installed it.
///
/// Lines are whole: a lock keeps two threads' lines apart. The write is synchronous, so a standard
/// error nobody reads (a full pipe) blocks the thread that logs; the broker's `/healthz` notices
/// when that thread is its forwarding loop.
public struct BusLogHandler: LogHandler {
    /// The level below which lines are dropped.
    public var logLevel: Logger.Level
    /// Fields every line of this logger carries.
    public var metadata: Logger.Metadata = [:]
    /// Adds task-local fields, if set.
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let format: LogFormat
    private let sink: LogSink

    /// A handler for `label` writing to `sink` (standard error by default).
    public init(label: String, format: LogFormat, level: Logger.Level, sink: LogSink = .standardError) {
        self.label = label
        self.format = format
        self.logLevel = level
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let line = Self.render(
            format: format, timestamp: Self.timestamp(), level: event.level, label: label,
            message: event.message.description, fields: fields)
        sink.write(line + "\n")
    }

    /// One line, without its newline.
    package static func render(
        format: LogFormat, timestamp: String, level: Logger.Level, label: String, message: String,
        fields: Logger.Metadata
    ) -> String {
        let sorted = fields.sorted { $0.key < $1.key }
        switch format {
        case .text:
            var line = "\(timestamp) \(level) \(label): \(Self.singleLine(message))"
            for (key, value) in sorted { line += " \(key)=\(Self.textValue(value))" }
            return line
        case .json:
            var line = "{\"timestamp\":\(JSONString.quoted(timestamp)),\"level\":\(JSONString.quoted(level.rawValue)),"
                + "\"label\":\(JSONString.quoted(label)),\"message\":\(JSONString.quoted(message))"
            for (key, value) in sorted where !["timestamp", "level", "label", "message"].contains(key) {
                line += ",\(JSONString.quoted(key)):\(jsonValue(value))"
            }
            return line + "}"
        }
    }

    /// Now, UTC, to the millisecond: `2026-11-25T10:38:11.123Z`.
    package static func timestamp() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let milliseconds = Int(spec.tv_nsec / 1_000_000)
        let fraction = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }

    /// A message on one line: newlines and other control characters escaped, so one event is one line.
    private static func singleLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: JSONString.isControl) else { return text }
        let quoted = JSONString.quoted(text)
        return String(quoted.dropFirst().dropLast())
    }

    /// A field value in a text line: as is when it is one plain word, else a JSON string.
    private static func textValue(_ value: Logger.Metadata.Value) -> String {
        let text = "\(value)"
        let plain = !text.isEmpty && !text.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || JSONString.isControl($0)
        }
        return plain ? text : JSONString.quoted(text)
    }

    private static func jsonValue(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): return JSONString.quoted(text)
        case .stringConvertible(let value):
            // Numbers (and booleans) stay so, so a collector can compare them; give them as
            // `.stringConvertible(n)`, not `"\(n)"` (a string, which stays one).
            let text = value.description
            if value is any BinaryInteger || value is Bool || (value is Double && Double(text)?.isFinite == true) { return text }
            return JSONString.quoted(text)
        case .array(let values): return "[" + values.map(jsonValue).joined(separator: ",") + "]"
        case .dictionary(let fields):
            return "{" + fields.sorted { $0.key < $1.key }.map { JSONString.quoted($0.key) + ":" + jsonValue($0.value) }
                .joined(separator: ",") + "}"
        }
    }
}

extension Logger.Level {
    /// The levels as `--log-level` spells them.
    package static let names = Logger.Level.allCases.map(\.rawValue)
}
