#if canImport(Glibc)
import Glibc
#endif
import CZeroMQ

/// CURVE key files in the text format of czmq's `zcert` files (pyzmq's `zmq.auth.load_certificate`
/// reads these, and these functions read zcert files):
///
/// ```
/// #   ZeroMQ CURVE secret key. ...comment lines...
/// metadata
/// curve
///     public-key = "<40 Z85 characters>"
///     secret-key = "<40 Z85 characters>"
/// ```
///
/// `NAME.pub` holds the `public-key` line only; `NAME.key` holds both and is created with mode 0600.
/// Reading skips blank lines, `#` comments, the `metadata` and `curve` section lines and other
/// `name = value` lines; quotes around a key are optional, and a file holding just the key on one
/// line also works. A secret key file that its group or others may access is refused.
public enum CurveKeyFile {
    /// The extension of public key files, also what an allow-list folder is scanned for: `pub`.
    public static let publicKeyExtension = "pub"
    /// The extension of secret key files: `key`.
    public static let secretKeyExtension = "key"
    /// Key files are small; anything larger is refused unread.
    static let maximumFileSize = 65_536

    // MARK: Reading

    /// The public key in the file at `path`: its `public-key` line, else a bare key line, else the
    /// public half of its `secret-key`.
    public static func readPublicKey(at path: String) throws(CurveKeyError) -> String {
        let parsed = try parse(try readText(at: path).text, path: path)
        if let publicKey = parsed.publicKey ?? parsed.bareKey { return publicKey }
        if let secretKey = parsed.secretKey { return try derivePublicKey(secretKey, path: path) }
        throw .missingKey(path: path, field: "public-key")
    }

    /// The key pair in the secret key file at `path`; refuses a file its group or others may access,
    /// and a `public-key` line that does not belong to the `secret-key`.
    public static func readKeyPair(at path: String) throws(CurveKeyError) -> CurveKeyPair {
        let (text, mode) = try readText(at: path)
        guard mode & 0o077 == 0 else { throw .readableByOthers(path: path, mode: mode) }
        let parsed = try parse(text, path: path)
        guard let secretKey = parsed.secretKey ?? parsed.bareKey else {
            throw .missingKey(path: path, field: "secret-key")
        }
        let pair: CurveKeyPair
        do { pair = try CurveKeyPair(secretKey: secretKey) } catch { throw .invalidZ85(path: path, line: 0) }
        if let publicKey = parsed.publicKey, publicKey != pair.publicKey { throw .keysDoNotMatch(path: path) }
        return pair
    }

    // MARK: Writing

    /// Writes `basePath.key` (both keys, created with mode 0600, never widened later) and
    /// `basePath.pub` (the public key, 0644); returns their paths. Refuses to replace an existing
    /// file unless `replacing`; on failure nothing is left half-written.
    @discardableResult
    public static func write(
        _ pair: CurveKeyPair, basePath: String, replacing: Bool = false
    ) throws(CurveKeyError) -> (secretKeyPath: String, publicKeyPath: String) {
        let secretPath = "\(basePath).\(secretKeyExtension)"
        let publicPath = "\(basePath).\(publicKeyExtension)"
        for path in [secretPath, publicPath] {
            if replacing {
                do { _ = try systemCall("unlink") { unlink(path) } } catch where error.code == ENOENT {} catch {
                    throw .unreadable(path: path, reason: error.message)
                }
            } else if exists(path) {
                throw .alreadyExists(path: path)
            }
        }
        try create(secretPath, mode: 0o600, contents: secretFileText(pair))
        do {
            try create(publicPath, mode: 0o644, contents: publicFileText(pair.publicKey))
        } catch {
            unlink(secretPath)
            throw error
        }
        return (secretPath, publicPath)
    }

    /// The text of a public key file.
    public static func publicFileText(_ publicKey: String) -> String {
        """
        #   ZeroMQ CURVE public key (Z85). Share it with the peers that must trust this key:
        #   a broker's allow-list folder, or the clients of a server.
        metadata
        curve
            public-key = "\(publicKey)"

        """
    }

    /// The text of a secret key file.
    public static func secretFileText(_ pair: CurveKeyPair) -> String {
        """
        #   ZeroMQ CURVE secret key (Z85). Keep it private: mode 0600, on this machine only.
        #   Its public half is also in the .pub file written with it.
        metadata
        curve
            public-key = "\(pair.publicKey)"
            secret-key = "\(pair.secretKey)"

        """
    }

    // MARK: Private

    struct ParsedKeys {
        var publicKey: String?
        var secretKey: String?
        var bareKey: String?
    }

    /// Finds the key lines and checks each key's text.
    static func parse(_ text: String, path: String) throws(CurveKeyError) -> ParsedKeys {
        var parsed = ParsedKeys()
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = trimmed(rawLine)
            if line.isEmpty || line.hasPrefix("#") || line == "metadata" || line == "curve" { continue }
            let number = index + 1
            // A key itself may contain `=` (it is in the Z85 alphabet): a whole-line key is a bare key.
            let isWholeKey = unquoted(line).utf8.count == 40 && !line.contains(" ")
            guard !isWholeKey, let equals = line.firstIndex(of: "=") else {
                guard parsed.bareKey == nil else { throw .duplicateKey(path: path, field: "key") }
                parsed.bareKey = try checkedKey(unquoted(line), path: path, line: number)
                continue
            }
            let field = trimmed(line[..<equals])
            let value = unquoted(trimmed(line[line.index(after: equals)...]))
            switch field {
            case "public-key":
                guard parsed.publicKey == nil else { throw .duplicateKey(path: path, field: String(field)) }
                parsed.publicKey = try checkedKey(value, path: path, line: number)
            case "secret-key":
                guard parsed.secretKey == nil else { throw .duplicateKey(path: path, field: String(field)) }
                parsed.secretKey = try checkedKey(value, path: path, line: number)
            default:
                continue  // zcert metadata such as `name = "..."`
            }
        }
        return parsed
    }

    private static func checkedKey(_ text: Substring, path: String, line: Int) throws(CurveKeyError) -> String {
        let key = String(text)
        guard key.utf8.allSatisfy({ Z85.alphabet.contains($0) }) else { throw .invalidZ85(path: path, line: line) }
        guard key.utf8.count == 40 else { throw .wrongKeyLength(path: path, line: line, characters: key.utf8.count) }
        return key
    }

    private static func derivePublicKey(_ secretKey: String, path: String) throws(CurveKeyError) -> String {
        do { return try CurveKeyPair.publicKey(forSecretKey: secretKey) } catch { throw .invalidZ85(path: path, line: 0) }
    }

    private static func trimmed(_ text: Substring) -> Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) })
        else { return "" }
        return text[first...last]
    }

    private static func unquoted(_ text: Substring) -> Substring {
        for quote in ["\"", "'"] as [Character] where text.count >= 2 && text.first == quote && text.last == quote {
            return text.dropFirst().dropLast()
        }
        return text
    }

    /// The file's text and permission bits; the mode checked is that of the file read (`fstat` on
    /// the open descriptor). Nothing here blocks: a path that is not a regular file is refused
    /// before it is opened, and the open itself cannot wait.
    static func readText(at path: String) throws(CurveKeyError) -> (text: String, mode: UInt32) {
        // Looked at first (following links, as open does): opening a FIFO waits for a writer,
        // forever and past SIGTERM, and opening a device can have effects of its own.
        var before = stat()
        do {
            _ = try systemCall("stat") { stat(path, &before) }
        } catch {
            throw error.code == ENOENT ? .fileNotFound(path: path) : .unreadable(path: path, reason: error.message)
        }
        guard before.st_mode & S_IFMT == S_IFREG else { throw .notAKeyFile(path: path, reason: notRegular(before.st_mode)) }
        // O_NONBLOCK: should the path become a FIFO between the stat and the open, the open still
        // returns at once (and the fstat below refuses it).
        let fd: Int32
        do {
            fd = try systemCall("open") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        } catch {
            throw error.code == ENOENT ? .fileNotFound(path: path) : .unreadable(path: path, reason: error.message)
        }
        defer { close(fd) }
        var info = stat()
        do { _ = try systemCall("fstat") { fstat(fd, &info) } } catch { throw .unreadable(path: path, reason: error.message) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notAKeyFile(path: path, reason: notRegular(info.st_mode)) }
        // A regular file: reads block as reads of files do (the flag was only for the open).
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        guard info.st_size <= maximumFileSize else {
            throw .notAKeyFile(path: path, reason: "\(info.st_size) bytes; key files are a few hundred")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= maximumFileSize {
            let count: Int32
            do {
                count = try systemCall("read") { buffer.withUnsafeMutableBytes { Int32(read(fd, $0.baseAddress, $0.count)) } }
            } catch {
                throw .unreadable(path: path, reason: error.message)
            }
            if count == 0 { break }
            bytes += buffer[0..<Int(count)]
        }
        guard bytes.count <= maximumFileSize else { throw .notAKeyFile(path: path, reason: "it grew past 64 KiB") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .notAKeyFile(path: path, reason: "not UTF-8 text")
        }
        return (text, UInt32(info.st_mode) & 0o7777)
    }

    /// Why a file of `mode` is not a key file: what it is instead.
    static func notRegular(_ mode: mode_t) -> String {
        let kind: String
        switch mode & S_IFMT {
        case S_IFDIR: kind = "a folder"
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFCHR, S_IFBLK: kind = "a device"
        default: kind = "not a file"
        }
        return "not a regular file: \(kind)"
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Creates `path` with `mode` from the start (`O_EXCL`: never an existing file or a symlink's
    /// target), writes `contents` and flushes it to disk.
    private static func create(_ path: String, mode: mode_t, contents: String) throws(CurveKeyError) {
        let fd: Int32
        do {
            fd = try systemCall("open") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
        } catch {
            throw error.code == EEXIST ? .alreadyExists(path: path) : .unreadable(path: path, reason: error.message)
        }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        var written = 0
        do {
            while written < bytes.count {
                written += Int(
                    try systemCall("write") {
                        bytes.withUnsafeBytes { all in
                            let rest = UnsafeRawBufferPointer(rebasing: all[written...])
                            return Int32(Glibc.write(fd, rest.baseAddress, rest.count))
                        }
                    })
            }
            _ = try systemCall("fsync") { fsync(fd) }
        } catch {
            unlink(path)
            throw .unreadable(path: path, reason: error.message)
        }
    }
}
