import Foundation
import NotificationBus

/// Unbuffered-enough writers for stdout/stderr that several tasks can share.
enum FileWriter {
    case standardOutput, standardError

    func write(_ text: String) {
        let handle = self == .standardOutput ? FileHandle.standardOutput : FileHandle.standardError
        handle.write(Data(text.utf8))
    }
}

/// How `nbus subscribe` prints notifications and gaps.
enum OutputFormat: String, CaseIterable, Sendable {
    case text, json

    func render(_ event: BusEvent) -> String {
        switch (self, event) {
        case (.text, .notification(let n)):
            let headers = n.headers.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            let payload = String(validatingUTF8: n.payload) ?? "base64:" + Data(n.payload).base64EncodedString()
            var line = "\(n.name) seq=\(n.sequence) publisher=\(String(n.publisherID, radix: 16))"
            if !headers.isEmpty { line += " headers=[\(headers)]" }
            if n.contentType != .unspecified { line += " type=\(n.contentType)" }
            return line + " payload=\(payload)"
        case (.text, .gap(let gap)):
            return "! \(gap)"
        case (.json, .notification(let n)):
            var object: [String: Any] = [
                "name": n.name.rawValue, "sequence": n.sequence, "publisherID": String(n.publisherID, radix: 16),
                "timestamp": n.timestamp, "contentType": Int(n.contentType.rawValue),
                "headers": Dictionary(n.headers.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }),
            ]
            if let text = String(validatingUTF8: n.payload) {
                object["payload"] = text
            } else {
                object["payloadBase64"] = Data(n.payload).base64EncodedString()
            }
            return Self.json(object)
        case (.json, .gap(let gap)):
            var object: [String: Any] = ["gap": gap.cause.rawValue, "count": gap.count]
            if let name = gap.name { object["name"] = name.rawValue }
            if let publisher = gap.publisherID { object["publisherID"] = String(publisher, radix: 16) }
            if let sequences = gap.sequences {
                object["firstSequence"] = sequences.lowerBound
                object["lastSequence"] = sequences.upperBound
            }
            return Self.json(object)
        }
    }

    static func json(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension String {
    /// The bytes as text when they are valid UTF-8, else nil.
    init?(validatingUTF8 bytes: [UInt8]) {
        guard let text = String(bytes: bytes, encoding: .utf8) else { return nil }
        self = text
    }
}
