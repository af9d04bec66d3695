import CZeroMQ

/// A CURVE long-term key pair, each key as 40 characters of Z85 text.
public struct CurveKeyPair: Sendable, Equatable {
    /// The public key (Z85, 40 characters).
    public let publicKey: String
    /// The secret key (Z85, 40 characters); keep it out of logs and world-readable files.
    public let secretKey: String

    /// The pair of `secretKey`, its public key derived with `zmq_curve_public`; a string that is not a
    /// Z85 CURVE key (40 characters of the Z85 alphabet) throws `EINVAL`.
    public init(secretKey: String) throws(ZMQError) {
        publicKey = try Self.publicKey(forSecretKey: secretKey)
        self.secretKey = secretKey
    }

    private init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// Generates a fresh key pair with `zmq_curve_keypair` (needs libzmq built with CURVE).
    public static func generate() throws(ZMQError) -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        _ = try zmqCall("zmq_curve_keypair") { zmq_curve_keypair(&publicKey, &secretKey) }
        return CurveKeyPair(
            publicKey: String(decoding: publicKey.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self),
            secretKey: String(decoding: secretKey.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Derives the public key of a Z85 secret key with `zmq_curve_public`.
    ///
    /// The text is checked first (`isValidKey`): libzmq decodes until the NUL, so a longer string
    /// would overrun its 32-byte buffer.
    public static func publicKey(forSecretKey secretKey: String) throws(ZMQError) -> String {
        guard isValidKey(secretKey) else { throw ZMQError(code: czmq_einval(), operation: "zmq_curve_public") }
        var publicKey = [CChar](repeating: 0, count: 41)
        _ = try zmqCall("zmq_curve_public") { zmq_curve_public(&publicKey, secretKey) }
        return String(decoding: publicKey.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `text` has the shape of a CURVE key in Z85: exactly 40 characters of the Z85 alphabet
    /// (32 bytes). Every 32-byte string is a usable key, so this is the whole check.
    public static func isValidKey(_ text: String) -> Bool {
        text.utf8.count == 40 && Z85.isValid(text)
    }
}

/// ZeroMQ's Z85 text encoding of binary keys (RFC 32).
public enum Z85 {
    /// The 85 characters of the encoding, in value order.
    static let alphabet = Array(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    /// Whether `text` is decodable: a multiple of 5 characters, all from the Z85 alphabet.
    public static func isValid(_ text: String) -> Bool {
        text.utf8.count % 5 == 0 && text.utf8.allSatisfy { alphabet.contains($0) }
    }

    /// Encodes `bytes` (length a multiple of 4) as Z85 text; other lengths throw `EINVAL`.
    public static func encode(_ bytes: [UInt8]) throws(ZMQError) -> String {
        guard bytes.count % 4 == 0 else { throw ZMQError(code: czmq_einval(), operation: "zmq_z85_encode") }
        var text = [CChar](repeating: 0, count: bytes.count * 5 / 4 + 1)
        let ok = bytes.withUnsafeBufferPointer { zmq_z85_encode(&text, $0.baseAddress, $0.count) != nil }
        guard ok else { throw ZMQError(code: czmq_einval(), operation: "zmq_z85_encode") }
        return String(decoding: text.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes Z85 `text` (length a multiple of 5, Z85 alphabet only); anything else throws `EINVAL`.
    public static func decode(_ text: String) throws(ZMQError) -> [UInt8] {
        guard isValid(text) else { throw ZMQError(code: czmq_einval(), operation: "zmq_z85_decode") }
        var bytes = [UInt8](repeating: 0, count: text.utf8.count * 4 / 5)
        let ok = bytes.withUnsafeMutableBufferPointer { zmq_z85_decode($0.baseAddress, text) != nil }
        guard ok else { throw ZMQError(code: czmq_einval(), operation: "zmq_z85_decode") }
        return bytes
    }
}
