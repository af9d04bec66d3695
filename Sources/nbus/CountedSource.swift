import NotificationBus
import ToolSupport

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
