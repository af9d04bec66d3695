import Foundation
import NBP1

/// The NBP/1 test vectors in `protocol/vectors/`, shared with the Python reference codec.
struct ProtocolVector: Decodable, Sendable, CustomStringConvertible {
    struct Decoded: Decodable, Sendable {
        let name: String
        let version: Int
        let flags: Int
        let contentType: Int
        let sequence: String
        let publisherId: String
        let timestamp: String
        let headers: [[String]]
        let payloadHex: String
    }

    let id: String
    let description: String
    let frames: [String]
    let maxPayload: Int?
    let expect: String
    let canonical: Bool?
    let reason: String?
    let decoded: Decoded?

    var frameBytes: [[UInt8]] { frames.map(Self.bytes(fromHex:)) }

    static func bytes(fromHex hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.utf8.count / 2)
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(nibble(high) << 4 | nibble(low)))
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return c - UInt8(ascii: "A") + 10
        }
    }

    static func load(_ file: String) throws -> [ProtocolVector] {
        struct File: Decodable { let vectors: [ProtocolVector] }
        let url = try vectorFile(file)
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }

    static let valid: [ProtocolVector] = (try? load("valid.json")) ?? []
    static let invalid: [ProtocolVector] = (try? load("invalid.json")) ?? []
}

/// The batch-frame vectors (`protocol/vectors/batch-valid.json`, `batch-invalid.json`): a valid
/// one lists every notification of the batch in order; an invalid one, how many notifications
/// the rejected batch declared (`records`, nil where its header does not say).
struct BatchVector: Decodable, Sendable, CustomStringConvertible {
    let id: String
    let description: String
    let frames: [String]
    let maxPayload: Int?
    let expect: String
    let canonical: Bool?
    let reason: String?
    let records: Int?
    let decoded: [ProtocolVector.Decoded]?

    var frameBytes: [[UInt8]] { frames.map(ProtocolVector.bytes(fromHex:)) }

    static func load(_ file: String) throws -> [BatchVector] {
        struct File: Decodable { let vectors: [BatchVector] }
        let url = try vectorFile(file)
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }

    static let valid: [BatchVector] = (try? load("batch-valid.json")) ?? []
    static let invalid: [BatchVector] = (try? load("batch-invalid.json")) ?? []
}

/// `protocol/vectors/<file>` in the repository this test file is in: the nearest folder above
/// `#filePath` that has it. Found by walking up rather than by a fixed depth, because the codec
/// tests are also compiled from `Tests/ASan` (the AddressSanitizer package), through symbolic links.
func vectorFile(_ file: String, from path: String = #filePath) throws -> URL {
    var folder = URL(fileURLWithPath: path).deletingLastPathComponent()
    while folder.path != "/" {
        let candidate = folder.appendingPathComponent("protocol/vectors/\(file)")
        if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "protocol/vectors/\(file) above \(path)"])
}
