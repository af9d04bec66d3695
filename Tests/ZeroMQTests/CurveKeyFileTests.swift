import Foundation
import TestSupport
import Testing
import ZeroMQ

/// A fresh folder for key files (a `TempFolder` that can write them), removed by `remove()`.
struct KeyFolder {
    private let folder: TempFolder
    var path: String { folder.path }

    init() throws { folder = try TempFolder(prefix: "nbus-keys") }

    func file(_ name: String) -> String { folder.file(name) }

    /// Writes `text` to `name` with `mode`.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func remove() { folder.remove() }
}

func permissions(of path: String) throws -> Int {
    try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
}

@Suite("CURVE key files and allow lists")
struct CurveKeyFileTests {
    @Test("Written key files read back as the same pair; the secret file is 0600, the public one holds no secret")
    func roundTrip() throws {
        let folder = try KeyFolder()
        defer { folder.remove() }
        let pair = try CurveKeyPair.generate()
        let paths = try CurveKeyFile.write(pair, basePath: folder.file("alice"))
        #expect(paths.secretKeyPath == folder.file("alice.key") && paths.publicKeyPath == folder.file("alice.pub"))
        #expect(try permissions(of: paths.secretKeyPath) == 0o600)
        #expect(try CurveKeyFile.readKeyPair(at: paths.secretKeyPath) == pair)
        #expect(try CurveKeyFile.readPublicKey(at: paths.publicKeyPath) == pair.publicKey)
        #expect(try CurveKeyFile.readPublicKey(at: paths.secretKeyPath) == pair.publicKey)
        let publicText = try String(contentsOfFile: paths.publicKeyPath, encoding: .utf8)
        #expect(!publicText.contains(pair.secretKey))
        #expect(publicText.contains("public-key = \"\(pair.publicKey)\""))
    }

    @Test("An existing key file is never replaced by accident; replacing on purpose keeps the secret file 0600")
    func notReplacedByAccident() throws {
        let folder = try KeyFolder()
        defer { folder.remove() }
        let first = try CurveKeyPair.generate()
        let paths = try CurveKeyFile.write(first, basePath: folder.file("k"))
        #expect(try permissions(of: paths.secretKeyPath) == 0o600)
        #expect(throws: CurveKeyError.alreadyExists(path: paths.secretKeyPath)) {
            try CurveKeyFile.write(try CurveKeyPair.generate(), basePath: folder.file("k"))
        }
        #expect(try CurveKeyFile.readKeyPair(at: paths.secretKeyPath) == first)
        let second = try CurveKeyPair.generate()
        try CurveKeyFile.write(second, basePath: folder.file("k"), replacing: true)
        #expect(try CurveKeyFile.readKeyPair(at: paths.secretKeyPath) == second)
        #expect(try permissions(of: paths.secretKeyPath) == 0o600)
    }

    @Test("zcert-style files with metadata, and files holding just the key, are read")
    func otherLayouts() throws {
        let folder = try KeyFolder()
        defer { folder.remove() }
        let pair = try CurveKeyPair.generate()
        let zcert = try folder.write(
            "zcert.key",
            """
            #   ****  Generated on 2024-01-01 by CZMQ  ****
            metadata
                name = "alice"
            curve
                public-key = "\(pair.publicKey)"
                secret-key = "\(pair.secretKey)"
            """)
        #expect(try CurveKeyFile.readKeyPair(at: zcert) == pair)
        let bare = try folder.write("bare.pub", "\(pair.publicKey)\n", mode: 0o644)
        #expect(try CurveKeyFile.readPublicKey(at: bare) == pair.publicKey)
        let bareSecret = try folder.write("bare.key", "  \(pair.secretKey)\r\n")
        #expect(try CurveKeyFile.readKeyPair(at: bareSecret) == pair)
    }

    @Test("Bad key files are refused with an error naming the file, the line and the problem")
    func badFiles() throws {
        let folder = try KeyFolder()
        defer { folder.remove() }
        let pair = try CurveKeyPair.generate()
        let missing = folder.file("nope.key")
        #expect(throws: CurveKeyError.fileNotFound(path: missing)) { try CurveKeyFile.readKeyPair(at: missing) }

        let badZ85 = try folder.write("bad.pub", "curve\n    public-key = \"\(pair.publicKey.dropLast())~\"\n")
        #expect(throws: CurveKeyError.invalidZ85(path: badZ85, line: 2)) { try CurveKeyFile.readPublicKey(at: badZ85) }

        let short = try folder.write("short.pub", "public-key = \"\(pair.publicKey.dropLast(5))\"\n")
        #expect(throws: CurveKeyError.wrongKeyLength(path: short, line: 1, characters: 35)) {
            try CurveKeyFile.readPublicKey(at: short)
        }

        let empty = try folder.write("empty.key", "# nothing here\n")
        #expect(throws: CurveKeyError.missingKey(path: empty, field: "secret-key")) {
            try CurveKeyFile.readKeyPair(at: empty)
        }

        let other = try CurveKeyPair.generate()
        let mismatched = try folder.write(
            "mismatch.key", "public-key = \"\(other.publicKey)\"\nsecret-key = \"\(pair.secretKey)\"\n")
        #expect(throws: CurveKeyError.keysDoNotMatch(path: mismatched)) { try CurveKeyFile.readKeyPair(at: mismatched) }

        let open = try folder.write("open.key", CurveKeyFile.secretFileText(pair), mode: 0o644)
        #expect(throws: CurveKeyError.readableByOthers(path: open, mode: 0o644)) { try CurveKeyFile.readKeyPair(at: open) }
        #expect(
            CurveKeyError.readableByOthers(path: open, mode: 0o644).description.contains("chmod 600 \(open)"))
        // The public half of a too-open secret file is still readable: it is public.
        #expect(try CurveKeyFile.readPublicKey(at: open) == pair.publicKey)

        #expect(throws: CurveKeyError.notAKeyFile(path: folder.path, reason: "not a regular file: a folder")) {
            try CurveKeyFile.readPublicKey(at: folder.path)
        }
    }

    @Test("A secret key of the wrong length is refused before libzmq could overrun its buffer")
    func secretKeyLengthChecked() throws {
        let pair = try CurveKeyPair.generate()
        #expect(throws: ZMQError.self) { try CurveKeyPair.publicKey(forSecretKey: pair.secretKey + "abcde") }
        #expect(throws: ZMQError.self) { try CurveKeyPair(secretKey: String(pair.secretKey.dropLast())) }
        #expect(try CurveKeyPair(secretKey: pair.secretKey) == pair)
    }

    @Test("An allow list loads every *.pub file of a folder, names keys by file, and ignores the rest")
    func allowListFromFolder() throws {
        let folder = try KeyFolder()
        defer { folder.remove() }
        let alice = try CurveKeyPair.generate()
        let bob = try CurveKeyPair.generate()
        try CurveKeyFile.write(alice, basePath: folder.file("alice"))  // alice.key is ignored
        try folder.write("bob.pub", CurveKeyFile.publicFileText(bob.publicKey), mode: 0o644)
        try folder.write("README", "not a key")
        let list = try CurveAllowList(directory: folder.path)
        #expect(list.count == 2)
        #expect(list.name(of: alice.publicKey) == "alice")
        #expect(list.name(of: bob.publicKey) == "bob")
        #expect(list.name(of: alice.secretKey) == nil)
        #expect(list.name(of: try CurveKeyPair.generate().publicKey) == nil)
    }

    @Test("A missing allow-list folder, a file instead of one, or a broken .pub in it is an error")
    func allowListErrors() throws {
        let folder = try KeyFolder()
        defer { folder.remove() }
        #expect(throws: CurveKeyError.directoryNotFound(path: folder.file("none"))) {
            try CurveAllowList(directory: folder.file("none"))
        }
        let file = try folder.write("file", "x")
        #expect(throws: CurveKeyError.notADirectory(path: file)) { try CurveAllowList(directory: file) }
        let broken = try folder.write("broken.pub", "public-key = \"short\"\n", mode: 0o644)
        #expect(throws: CurveKeyError.wrongKeyLength(path: broken, line: 1, characters: 5)) {
            try CurveAllowList(directory: folder.path)
        }
        #expect(throws: CurveKeyError.invalidKey(name: "x")) { try CurveAllowList(keys: ["x": "not a key"]) }
    }
}
