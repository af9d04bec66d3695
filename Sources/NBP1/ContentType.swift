/// What a payload's bytes are, as the one-byte NBP/1 content-type code; unknown codes are kept, never rejected.
public struct ContentType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as it travels in the frame.
    public let rawValue: UInt8
    /// The content type with `rawValue` as its code, known or not.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0: unspecified, opaque bytes.
    public static let unspecified = ContentType(rawValue: 0)
    /// 1: `text/plain; charset=utf-8`.
    public static let text = ContentType(rawValue: 1)
    /// 2: `application/json`.
    public static let json = ContentType(rawValue: 2)
    /// 3: `application/cbor`.
    public static let cbor = ContentType(rawValue: 3)
    /// 4: `application/msgpack`.
    public static let msgpack = ContentType(rawValue: 4)
    /// 5: `application/x-protobuf`.
    public static let protobuf = ContentType(rawValue: 5)

    /// The names `nbus publish --content-type` takes and `nbus subscribe --format json` prints, by code.
    private static let names: [(name: String, type: ContentType)] = [
        ("unspecified", .unspecified), ("text", .text), ("json", .json), ("cbor", .cbor), ("msgpack", .msgpack),
        ("protobuf", .protobuf),
    ]

    /// The short name (`json`), or the code in decimal (`200`) for a code without one: a string
    /// `init(name:)` reads back, so JSON output keeps one type for the field.
    public var name: String {
        Self.names.first { $0.type == self }?.name ?? String(rawValue)
    }

    /// A content type by short name (`json`) or by code in decimal (`2`, `200`); nil for anything else.
    public init?(name: String) {
        if let named = Self.names.first(where: { $0.name == name }) {
            self = named.type
        } else if let code = UInt8(name) {
            self.init(rawValue: code)
        } else {
            return nil
        }
    }

    public var description: String {
        switch rawValue {
        case 0: return "unspecified"
        case 1: return "text/plain"
        case 2: return "application/json"
        case 3: return "application/cbor"
        case 4: return "application/msgpack"
        case 5: return "application/x-protobuf"
        case 128...: return "application-defined(\(rawValue))"
        default: return "reserved(\(rawValue))"
        }
    }
}
