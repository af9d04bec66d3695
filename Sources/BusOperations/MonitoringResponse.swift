import Foundation

/// What a monitoring endpoint answers: a status, a content type and a body.
public struct MonitoringResponse: Sendable {
    /// The HTTP status (200, 503...).
    public var status: Int
    /// The `Content-Type` header.
    public var contentType: String
    /// The body.
    public var body: [UInt8]

    /// A response.
    public init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// Plain text, UTF-8.
    public static func text(_ text: String, status: Int = 200) -> MonitoringResponse {
        MonitoringResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// JSON from an `Encodable` value, keys sorted.
    public static func json(_ value: some Encodable, status: Int = 200) -> MonitoringResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        // The encoding error is for the operator's log, not the client: the client gets a 500
        // that says the response could not be made (the values here are numbers and strings).
        guard let data = try? encoder.encode(value) else {
            return .text("could not encode the response\n", status: 500)
        }
        return MonitoringResponse(status: status, contentType: "application/json", body: Array(data) + [0x0A])
    }
}
