/// Why a CURVE key file, key text or allow-list folder cannot be used; each kind names the file.
///
/// A struct with static members, not an enum, for the reason `BusError` is one: it is thrown typed
/// (`throws(CurveKeyError)`), and the kinds are this library's reading of files and folders, not
/// a protocol's fixed list: telling one more failure apart (a symbolic link refused, a key file on
/// a shared mount) must be a new static member, not a new case breaking every exhaustive `switch`.
/// Callers compare (`error == .fileNotFound(path: p)`), switch on `code` with a `default`, read
/// `path`, and `description` says it all in a sentence. Each member keeps the name (and labels)
/// of the enum case it replaces, so `throw .missingKey(path:field:)` reads as before.
public struct CurveKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure, for a `switch` (with a `default`: kinds may be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let fileNotFound = Code("fileNotFound")
        public static let unreadable = Code("unreadable")
        public static let notAKeyFile = Code("notAKeyFile")
        public static let missingKey = Code("missingKey")
        public static let invalidZ85 = Code("invalidZ85")
        public static let wrongKeyLength = Code("wrongKeyLength")
        public static let duplicateKey = Code("duplicateKey")
        public static let keysDoNotMatch = Code("keysDoNotMatch")
        public static let readableByOthers = Code("readableByOthers")
        public static let alreadyExists = Code("alreadyExists")
        public static let invalidKey = Code("invalidKey")
        public static let notADirectory = Code("notADirectory")
        public static let directoryNotFound = Code("directoryNotFound")
    }

    /// What the error is and carries; private, so that adding a kind breaks no caller.
    private enum Kind: Hashable, Sendable {
        case fileNotFound(path: String)
        case unreadable(path: String, reason: String)
        case notAKeyFile(path: String, reason: String)
        case missingKey(path: String, field: String)
        case invalidZ85(path: String, line: Int)
        case wrongKeyLength(path: String, line: Int, characters: Int)
        case duplicateKey(path: String, field: String)
        case keysDoNotMatch(path: String)
        case readableByOthers(path: String, mode: UInt32)
        case alreadyExists(path: String)
        case invalidKey(name: String)
        case notADirectory(path: String)
        case directoryNotFound(path: String)
    }

    private let kind: Kind

    private init(_ kind: Kind) { self.kind = kind }

    /// No file (or folder) at `path`.
    public static func fileNotFound(path: String) -> CurveKeyError { CurveKeyError(.fileNotFound(path: path)) }
    /// The file exists but cannot be read or written (`reason` is the system's text).
    public static func unreadable(path: String, reason: String) -> CurveKeyError {
        CurveKeyError(.unreadable(path: path, reason: reason))
    }
    /// The file is not a key file at all: a folder, larger than 64 KiB, or not UTF-8 text.
    public static func notAKeyFile(path: String, reason: String) -> CurveKeyError {
        CurveKeyError(.notAKeyFile(path: path, reason: reason))
    }
    /// The file has no `field` line (`public-key` or `secret-key`) and no bare key line.
    public static func missingKey(path: String, field: String) -> CurveKeyError {
        CurveKeyError(.missingKey(path: path, field: field))
    }
    /// The key on `line` has characters outside the Z85 alphabet.
    public static func invalidZ85(path: String, line: Int) -> CurveKeyError { CurveKeyError(.invalidZ85(path: path, line: line)) }
    /// The key on `line` is `characters` long; a CURVE key is 40 Z85 characters (32 bytes).
    public static func wrongKeyLength(path: String, line: Int, characters: Int) -> CurveKeyError {
        CurveKeyError(.wrongKeyLength(path: path, line: line, characters: characters))
    }
    /// The file holds two keys of the same kind.
    public static func duplicateKey(path: String, field: String) -> CurveKeyError {
        CurveKeyError(.duplicateKey(path: path, field: field))
    }
    /// The file's `public-key` is not the public half of its `secret-key`.
    public static func keysDoNotMatch(path: String) -> CurveKeyError { CurveKeyError(.keysDoNotMatch(path: path)) }
    /// A secret key file that its group or others may read or write (`mode` is the permission bits).
    public static func readableByOthers(path: String, mode: UInt32) -> CurveKeyError {
        CurveKeyError(.readableByOthers(path: path, mode: mode))
    }
    /// Writing would replace an existing file.
    public static func alreadyExists(path: String) -> CurveKeyError { CurveKeyError(.alreadyExists(path: path)) }
    /// A key given as text (not from a file) is not 40 Z85 characters; `name` says which key.
    public static func invalidKey(name: String) -> CurveKeyError { CurveKeyError(.invalidKey(name: name)) }
    /// An allow-list path that is not a folder.
    public static func notADirectory(path: String) -> CurveKeyError { CurveKeyError(.notADirectory(path: path)) }
    /// No folder at an allow-list path.
    public static func directoryNotFound(path: String) -> CurveKeyError { CurveKeyError(.directoryNotFound(path: path)) }

    /// The kind of failure.
    public var code: Code {
        switch kind {
        case .fileNotFound: return .fileNotFound
        case .unreadable: return .unreadable
        case .notAKeyFile: return .notAKeyFile
        case .missingKey: return .missingKey
        case .invalidZ85: return .invalidZ85
        case .wrongKeyLength: return .wrongKeyLength
        case .duplicateKey: return .duplicateKey
        case .keysDoNotMatch: return .keysDoNotMatch
        case .readableByOthers: return .readableByOthers
        case .alreadyExists: return .alreadyExists
        case .invalidKey: return .invalidKey
        case .notADirectory: return .notADirectory
        case .directoryNotFound: return .directoryNotFound
        }
    }

    /// The file or folder the error is about; nil for a key given as text (`invalidKey`).
    public var path: String? {
        switch kind {
        case .fileNotFound(let path), .unreadable(let path, _), .notAKeyFile(let path, _),
            .missingKey(let path, _), .invalidZ85(let path, _), .wrongKeyLength(let path, _, _),
            .duplicateKey(let path, _), .keysDoNotMatch(let path), .readableByOthers(let path, _),
            .alreadyExists(let path), .notADirectory(let path), .directoryNotFound(let path):
            return path
        case .invalidKey:
            return nil
        }
    }

    public var description: String {
        switch kind {
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
