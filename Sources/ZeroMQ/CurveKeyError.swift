/// Why a CURVE key file, key text or allow-list folder cannot be used; each case names the file.
public enum CurveKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No file (or folder) at `path`.
    case fileNotFound(path: String)
    /// The file exists but cannot be read or written (`reason` is the system's text).
    case unreadable(path: String, reason: String)
    /// The file is not a key file at all: a folder, larger than 64 KiB, or not UTF-8 text.
    case notAKeyFile(path: String, reason: String)
    /// The file has no `field` line (`public-key` or `secret-key`) and no bare key line.
    case missingKey(path: String, field: String)
    /// The key on `line` has characters outside the Z85 alphabet.
    case invalidZ85(path: String, line: Int)
    /// The key on `line` is `characters` long; a CURVE key is 40 Z85 characters (32 bytes).
    case wrongKeyLength(path: String, line: Int, characters: Int)
    /// The file holds two keys of the same kind.
    case duplicateKey(path: String, field: String)
    /// The file's `public-key` is not the public half of its `secret-key`.
    case keysDoNotMatch(path: String)
    /// A secret key file that its group or others may read or write (`mode` is the permission bits).
    case readableByOthers(path: String, mode: UInt32)
    /// Writing would replace an existing file.
    case alreadyExists(path: String)
    /// A key given as text (not from a file) is not 40 Z85 characters; `name` says which key.
    case invalidKey(name: String)
    /// An allow-list path that is not a folder.
    case notADirectory(path: String)
    /// No folder at an allow-list path.
    case directoryNotFound(path: String)

    public var description: String {
        switch self {
        case .fileNotFound(let path):
            return "\(path): no such file"
        case .unreadable(let path, let reason):
            return "\(path): \(reason)"
        case .notAKeyFile(let path, let reason):
            return "\(path): not a CURVE key file (\(reason))"
        case .missingKey(let path, let field):
            return "\(path): no \(field) line (expected `\(field) = \"<40 Z85 characters>\"`)"
        case .invalidZ85(let path, let line):
            return "\(path), line \(line): the key has characters outside the Z85 alphabet"
        case .wrongKeyLength(let path, let line, let characters):
            return "\(path), line \(line): the key is \(characters) characters; a CURVE key is 40 Z85 characters (32 bytes)"
        case .duplicateKey(let path, let field):
            return "\(path): more than one \(field) line"
        case .keysDoNotMatch(let path):
            return "\(path): public-key is not the public half of secret-key"
        case .readableByOthers(let path, let mode):
            return "\(path): a secret key file must be private, but its mode is \(Self.octal(mode)) "
                + "(group or others have access); run `chmod 600 \(path)`"
        case .alreadyExists(let path):
            return "\(path) already exists (remove it first, or replace it deliberately)"
        case .invalidKey(let name):
            return "\(name) is not a CURVE key (40 Z85 characters)"
        case .notADirectory(let path):
            return "\(path): not a folder"
        case .directoryNotFound(let path):
            return "\(path): no such folder"
        }
    }

    /// `0644`-style text for permission bits.
    static func octal(_ mode: UInt32) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return "0" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }
}
