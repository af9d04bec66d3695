import FoundationEssentials

/// The bus's JSON coding: what `BusMessage`'s default `encodeBusPayload`/`decodeBusPayload` use.
///
/// A `Codable` encoder and decoder that write and read JSON bytes directly (no `Data`, no
/// intermediate tree on the way out), in the representation Foundation's `JSONEncoder` and
/// `JSONDecoder` use by default, so either side of the wire may be either coder, or Python's
/// `json`: `Date` as seconds since 2001-01-01 (a number), `Data` as a Base64 string, `URL` as its
/// absolute string, `Decimal` as a number, `/` escaped as `\/`, an integral `Double` without its
/// `.0`. Object keys come in the order the value encodes them (a synthesized conformance: the
/// declaration order), so the same value makes the same bytes in every run.
///
/// The encoder refuses a non-finite `Double` or `Float` (`EncodingError.invalidValue`). The
/// decoder reads RFC 8259 JSON only: it refuses trailing commas, comments, invalid UTF-8, lone
/// surrogates, control characters in strings, nesting deeper than 128, a number that does not
/// fit the type asked for; every refusal is a `DecodingError` with its coding path, never a crash.
public enum BusJSON {
    /// How deep the decoder reads nested arrays and objects.
    public static let maximumDepth = 128

    /// `value` as JSON bytes.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let writer = BusJSONWriter()
        do {
            try writer.encodeTopLevel(value)
        } catch is BusJSONWriter.OutOfOrder {
            return try foundationFallback(value)
        }
        if writer.outOfOrder { return try foundationFallback(value) }
        return writer.bytes
    }

    /// The `T` that `bytes` holds as JSON.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let document = try BusJSONDocument(bytes)
        return try document.decode(T.self, at: 0, path: [])
    }

    /// An `encode(to:)` that writes into a container after its parent has moved on (legal in
    /// `Codable`, never done by a synthesized conformance) cannot be written in one pass: such a
    /// value is encoded by Foundation's `JSONEncoder` instead (sorted keys, for stable bytes).
    static func foundationFallback<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }
}
