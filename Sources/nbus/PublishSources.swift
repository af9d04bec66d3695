import NotificationBus
import ToolSupport

/// One thing `nbus publish` takes from its input: a notification to post, or an input line it
/// skips (and counts) with the reason.
enum PublishItem {
    /// `line`: the input line it came from (nil for counted posts); a post ZeroMQ or the bus
    /// refuses for this notification alone is then skipped and counted instead of ending the run.
    case post(line: Int?, name: NotificationName, payload: [UInt8], headers: NotificationHeaders, type: ContentType)
    case skip(line: Int, reason: String)
}

/// Where `nbus publish`'s notifications come from: a count (`--count`, `{n}` in the payload),
/// text lines (`--lines`) or JSON lines (`--lines --input json`). One posting loop
/// (`Publish.post`) takes them all: the wait for subscribers, cancellation, pacing and skips live
/// there once.
protocol PublishSource {
    /// The name whose subscribers are awaited before anything is read, when known up front; nil:
    /// the first post's name (a JSON line may name its own).
    var waitName: NotificationName? { get }
    /// The next item; nil at the end of the input. Throws when standard input cannot be read.
    mutating func next() async throws -> PublishItem?
}

/// `--count N` posts of NAME, payload `{n}` numbered (and padded to `--size`).
struct CountedSource: PublishSource {
    let name: NotificationName
    let count: Int
    let headers: NotificationHeaders
    let type: ContentType
    let payload: (Int) -> [UInt8]
    private var number = 0

    init(name: NotificationName, count: Int, headers: NotificationHeaders, type: ContentType, payload: @escaping (Int) -> [UInt8]) {
        self.name = name
        self.count = count
        self.headers = headers
        self.type = type
        self.payload = payload
    }

    var waitName: NotificationName? { name }

    mutating func next() async throws -> PublishItem? {
        guard number < count else { return nil }
        number += 1
        return .post(line: nil, name: name, payload: payload(number), headers: headers, type: type)
    }
}

/// `--lines`: each line's bytes, unchanged, are a payload of NAME.
struct TextLineSource: PublishSource {
    let name: NotificationName
    let headers: NotificationHeaders
    let type: ContentType
    let maximumPayload: Int
    private var lines: NumberedInputLines

    init(name: NotificationName, headers: NotificationHeaders, type: ContentType, maximumPayload: Int) {
        self.name = name
        self.headers = headers
        self.type = type
        self.maximumPayload = maximumPayload
        lines = NumberedInputLines(maximumLineBytes: maximumPayload)
    }

    var waitName: NotificationName? { name }

    mutating func next() async throws -> PublishItem? {
        switch try await lines.next() {
        case nil:
            return nil
        case (let number, .tooLong(let byteCount))?:
            return .skip(line: number, reason: "payload of \(byteCount) bytes exceeds the maximum of \(maximumPayload)")
        case (let number, .bytes(let payload))?:
            return .post(line: number, name: name, payload: payload, headers: headers, type: type)
        }
    }
}

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
                type: record.contentType ?? type)
        }
        return nil
    }
}

/// Standard input's lines for the line sources, numbered from 1 (for skip messages); a failed
/// read is thrown, so a line is its bytes or how long it was when over the limit.
struct NumberedInputLines {
    enum Line {
        case bytes([UInt8])
        case tooLong(byteCount: Int)
    }

    private let reader: StandardInputLineReader
    private var number = 0

    init(maximumLineBytes: Int) {
        reader = StandardInputLineReader(maximumLineBytes: maximumLineBytes)
    }

    /// The next line and its number; nil at the end of the input.
    mutating func next() async throws -> (number: Int, line: Line)? {
        guard let line = await reader.next() else { return nil }
        number += 1
        switch line {
        case .readFailed(let reason): throw StandardInputFailed(reason: reason)
        case .tooLong(let byteCount): return (number, .tooLong(byteCount: byteCount))
        case .bytes(let bytes): return (number, .bytes(bytes))
        }
    }
}
