import Foundation
import NotificationBus
import ToolSupport

/// One line of `nbus publish --lines --input json`: a JSON object in the shape
/// `nbus subscribe --format json` prints, so that output can be fed back.
///
/// Keys:
/// - `name` (string, optional): the notification name; without it the command's NAME.
/// - `headers` (object, optional): string, number or boolean values (numbers and booleans as
///   their JSON text), added to the `--header` options (a line's key wins).
/// - `payload` (optional): a string is sent as its UTF-8 bytes; any other JSON value as its JSON
///   text, exactly as the line writes it; `null` is an empty payload.
/// - `payloadBase64` (string, optional): the payload bytes in base64 (what `subscribe` prints for
///   a payload that is not UTF-8). Not together with `payload`.
/// - `contentType` (optional): a name as in `--content-type` (what `subscribe` prints) or a code
///   0-255, as a number or a string; it wins over `--content-type`.
/// - `flags` (number, optional): its retain bit (`0x01`, NBP-1 §18) posts this line retained, as
///   `--retain` does every line, so a retained state `subscribe --retained-only --format json`
///   printed can be posted again; the other bits are the publisher's to set and are ignored.
/// - `retained`, `publisherID`, `sequence`, `time`, `timestamp`: accepted and ignored (this
///   publisher stamps its own; a retained copy's `flags` carries the retain bit too).
///
/// Any other key makes the line invalid, as does a value of the wrong type.
struct JSONInputLine {
    /// The line's `name`, if it has one.
    var name: NotificationName?
    /// The line's own headers, in the order given.
    var headers: [(key: String, value: String)]
    /// The payload bytes.
    var payload: [UInt8]
    /// The line's `contentType`, if it has one.
    var contentType: ContentType?
    /// Whether the line's `flags` has the retain bit.
    var retain = false

    /// Keys a line may have, and what is done with them.
    static let usedKeys: Set<String> = ["name", "headers", "payload", "payloadBase64", "contentType", "flags"]
    /// Keys `nbus subscribe --format json` prints that a publisher cannot set.
    static let ignoredKeys: Set<String> = ["retained", "publisherID", "sequence", "time", "timestamp"]

    /// Why a line cannot be published; `description` is the reason printed on stderr.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Whether the line holds only blanks (such lines are ignored, not counted).
    static func isBlank(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
    }

    /// Parses one line's bytes.
    init(parsing bytes: [UInt8]) throws(Invalid) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            throw Invalid(String(validating: bytes, as: UTF8.self) == nil ? "not UTF-8 text, so not JSON" : "not valid JSON")
        }
        guard let object = parsed as? [String: Any] else { throw Invalid("not a JSON object") }
        if object["gap"] != nil { throw Invalid("a gap record (from nbus subscribe), not a notification") }
        let unknown = object.keys.filter { !Self.usedKeys.contains($0) && !Self.ignoredKeys.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw Invalid(
                "unknown key\(unknown.count == 1 ? "" : "s") \(unknown.map { "'\($0)'" }.joined(separator: ", ")) "
                    + "(expected name, headers, payload or payloadBase64, contentType, flags)")
        }

        switch object["name"] {
        case nil: name = nil
        case let text as String:
            do { name = try NotificationName(text) } catch { throw Invalid("invalid name '\(displayed(text))': \(error)") }
        default: throw Invalid("'name' must be a string")
        }

        // The headers in order and byte for byte (`OrderedJSON`): `object` has merged keys that
        // Swift's String finds equal, which NBP/1 keeps apart.
        headers = []
        guard case .object(let members)? = OrderedJSON.parse(bytes) else { throw Invalid("not valid JSON") }
        switch members.last(where: { $0.key.utf8.elementsEqual("headers".utf8) })?.value {
        case nil, .null?: break
        case .object(let pairs)?:
            for pair in pairs {
                let text: String
                switch pair.value {
                case .string(let value): text = value
                case .number(let value): text = value
                case .bool(let value): text = value ? "true" : "false"
                default: throw Invalid("header '\(pair.key)' must be a string, number or boolean")
                }
                headers.append((pair.key, text))
            }
        default: throw Invalid("'headers' must be an object")
        }

        switch (object["payload"], object["payloadBase64"]) {
        case (_?, _?):
            throw Invalid("both 'payload' and 'payloadBase64'; give one")
        case (nil, nil), (is NSNull, nil), (nil, is NSNull):
            payload = []
        case (let text as String, nil):
            payload = Array(text.utf8)
        case (_?, nil):
            // Any other JSON value: its text as written on the line (keys in their order, `/` not
            // escaped), not JSONSerialization's re-serialization. JSON keeps the last of a
            // repeated key, as `object` did.
            guard let member = members.last(where: { $0.key.utf8.elementsEqual("payload".utf8) }) else {
                throw Invalid("'payload' cannot be written as JSON text")
            }
            payload = Array(bytes[member.text])
        case (nil, let encoded as String):
            guard let data = Data(base64Encoded: encoded) else { throw Invalid("'payloadBase64' is not valid base64") }
            payload = Array(data)
        case (nil, _?):
            throw Invalid("'payloadBase64' must be a string")
        }

        switch object["flags"] {
        case nil, is NSNull: break
        case let number as NSNumber where !Self.isBoolean(number):
            guard let flags = UInt8(number.stringValue) else { throw Invalid("flags \(number) is not a number 0-255") }
            retain = flags & WireFormat.Flag.retain != 0
        default:
            throw Invalid("'flags' must be a number 0-255")
        }

        switch object["contentType"] {
        case nil, is NSNull: contentType = nil
        case let text as String:
            guard let type = Publish.contentType(named: text) else {
                throw Invalid("unknown contentType '\(text)' (a code 0-255 or unspecified, text, json, cbor, msgpack, protobuf)")
            }
            contentType = type
        case let number as NSNumber where !Self.isBoolean(number):
            guard let code = UInt8(number.stringValue) else { throw Invalid("contentType \(number) is not a code 0-255") }
            contentType = ContentType(rawValue: code)
        default:
            throw Invalid("'contentType' must be a code 0-255 or a name")
        }
    }

    /// Whether JSONSerialization made this number from `true` or `false`.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
