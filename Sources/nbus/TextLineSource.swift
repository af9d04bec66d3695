import NotificationBus
import ToolSupport

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
