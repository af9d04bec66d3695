#if canImport(Glibc)
import Glibc
#endif
import CZeroMQ

/// The CURVE public keys a server admits, each with a name for logs (like czmq's `zcertstore`).
///
/// Loaded from a folder: every file named `*.pub` in it (not in subfolders) is read with
/// `CurveKeyFile.readPublicKey`, and its name without `.pub` names the key. Other files are
/// ignored, so a secret `.key` file left there is never read. A `.pub` entry that cannot be read
/// as a key file (a folder, a FIFO, a broken link named `*.pub` too) is an error naming it: a
/// half-loaded allow list would refuse peers for no visible reason.
public struct CurveAllowList: Sendable, Equatable {
    /// Where the keys came from (the folder), or a description for a list built in code.
    public let source: String
    /// Admitted public keys (Z85) and their names.
    public let names: [String: String]

    /// Loads every `*.pub` file in `directory`, in name order (the first name of a repeated key wins).
    public init(directory: String) throws(CurveKeyError) {
        var info = stat()
        do {
            _ = try systemCall("stat") { stat(directory, &info) }
        } catch {
            throw error.code == ENOENT ? .directoryNotFound(path: directory) : .unreadable(path: directory, reason: error.message)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .notADirectory(path: directory) }
        guard let stream = opendir(directory) else {
            throw .unreadable(path: directory, reason: ZMQError(code: czmq_errno(), operation: "opendir").message)
        }
        var files: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix(".\(CurveKeyFile.publicKeyExtension)") && !name.hasPrefix(".") { files.append(name) }
        }
        closedir(stream)
        var names: [String: String] = [:]
        for file in files.sorted() {
            let path = directory.hasSuffix("/") ? directory + file : "\(directory)/\(file)"
            // Not skipped when it is a folder or a FIFO: someone meant it as a key, and the start
            // stops with an error naming it (readPublicKey refuses it before opening it).
            let key = try CurveKeyFile.readPublicKey(at: path)
            let name = String(file.dropLast(CurveKeyFile.publicKeyExtension.count + 1))
            if names[key] == nil { names[key] = name }
        }
        self.source = directory
        self.names = names
    }

    /// A list built in code: `names` maps each name to its public key (Z85). Throws for a key that
    /// is not 40 Z85 characters.
    public init(keys: [String: String], source: String = "a list in code") throws(CurveKeyError) {
        var names: [String: String] = [:]
        for (name, key) in keys.sorted(by: { $0.key < $1.key }) {
            guard CurveKeyPair.isValidKey(key) else { throw .invalidKey(name: name) }
            if names[key] == nil { names[key] = name }
        }
        self.source = source
        self.names = names
    }

    /// How many keys are admitted.
    public var count: Int { names.count }

    /// Whether no key is admitted (every peer will be refused).
    public var isEmpty: Bool { names.isEmpty }

    /// The name of an admitted key, or nil for a key not on the list.
    public func name(of publicKey: String) -> String? {
        names[publicKey]
    }
}
