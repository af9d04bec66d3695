import NotificationBus
import ToolSupport

/// `--lines --input json`: each line a `JSONInputLine` (what `subscribe --format json` prints);
/// blank lines are passed over, uncounted.
struct JSONLineSource: PublishSource {
    let defaultName: NotificationName
    let headers: NotificationHeaders
    let type: ContentType
    let maximumLineBytes: Int
    private var lines: NumberedInputLines

    init(defaultName: NotificationName, headers: NotificationHeaders, type: ContentType, maximumLineBytes: Int) {
        self.defaultName = defaultName
        self.headers = headers
        self.type = type
        self.maximumLineBytes = maximumLineBytes
        lines = NumberedInputLines(maximumLineBytes: maximumLineBytes)
    }

    /// The first valid line's name, not NAME: a replay of another publisher's output waits for
    /// the subscribers of what it will post.
    var waitName: NotificationName? { nil }

    mutating func next() async throws -> PublishItem? {
        while let (lineNumber, line) = try await lines.next() {
            let bytes: [UInt8]
            switch line {
            case .tooLong(let byteCount):
                return .skip(line: lineNumber, reason: "\(byteCount) bytes, over the \(maximumLineBytes) a JSON line may have")
            case .bytes(let read):
                bytes = read
            }
            if JSONInputLine.isBlank(bytes) { continue }
            let record: JSONInputLine
            do {
                record = try JSONInputLine(parsing: bytes)
            } catch {
                return .skip(line: lineNumber, reason: error.description)
            }
            var lineHeaders = headers
            for (key, value) in record.headers { lineHeaders[key] = value }
            return .post(
                line: lineNumber, name: record.name ?? defaultName, payload: record.payload, headers: lineHeaders,
                type: record.contentType ?? type, retain: record.retain)
        }
        return nil
    }
}
