import ArgumentParser
import Foundation
import ZeroMQ

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a CURVE key pair: NAME.key (secret, mode 0600) and NAME.pub (public).",
        discussion: """
            Both files are text in the format of czmq's zcert files (pyzmq's \
            zmq.auth.load_certificate reads them), each key as 40 Z85 characters:

              metadata
              curve
                  public-key = "<40 Z85 characters>"
                  secret-key = "<40 Z85 characters>"      (NAME.key only)

            NAME.key is created with mode 0600 from the start and is refused by every nbus \
            command if its group or others can read it; keep it on the machine that uses it. \
            NAME.pub holds only the public key: put it in the broker's --allow-publishers or \
            --allow-subscribers folder to admit this key, or give the broker's to clients as \
            --curve-server-key. Lines starting with # are comments; a file holding just the key \
            on one line is read too. Existing files are never replaced unless --force. A missing \
            DIR is created (mode 0700: it will hold a secret key).

            Exit status: 0 written, 1 not written (it says why), 64 bad arguments.

            Example: nbus keygen --output keys/broker   (keys/broker.key and keys/broker.pub)
            """)

    @Option(help: ArgumentHelp("Where to write: DIR/NAME makes DIR/NAME.key and DIR/NAME.pub.", valueName: "DIR/NAME"))
    var output: String

    @Flag(help: "Replace existing NAME.key and NAME.pub.")
    var force = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard !basePath.isEmpty, !basePath.hasSuffix("/") else {
            throw ValidationError("--output needs a file name, e.g. keys/broker (got '\(output)')")
        }
    }

    /// `--output` without a `.key` or `.pub` the user may have typed.
    var basePath: String {
        for suffix in [".\(CurveKeyFile.secretKeyExtension)", ".\(CurveKeyFile.publicKeyExtension)"]
        where output.hasSuffix(suffix) {
            return String(output.dropLast(suffix.count))
        }
        return output
    }

    func run() throws {
        logging.bootstrap()
        do {
            let folder = (basePath as NSString).deletingLastPathComponent
            var created = false
            if !folder.isEmpty && !FileManager.default.fileExists(atPath: folder) {
                try Self.makeFolders(folder)
                created = true
            }
            let pair = try CurveKeyPair.generate()
            let paths: (secretKeyPath: String, publicKeyPath: String)
            do {
                paths = try CurveKeyFile.write(pair, basePath: basePath, replacing: force)
            } catch {
                guard error.code == .alreadyExists, let path = error.path else { throw error }
                throw KeygenError(
                    message: "\(path) already exists: --force replaces the pair (clients that trust the old public key are then refused)")
            }
            FileWriter.standardOutput.write(
                (created ? "created \(folder)/ (mode 0700)\n" : "")
                    + "wrote \(paths.secretKeyPath) (secret, mode 0600) and \(paths.publicKeyPath)\npublic key \(pair.publicKey)\n")
        } catch {
            throw fail("keygen", error)
        }
    }

    /// `mkdir -p` with mode 0700 for what it creates; the system's reason when it cannot.
    static func makeFolders(_ path: String) throws(KeygenError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/\(component)"
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw KeygenError(message: "cannot create the folder \(current): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// A keygen failure in one sentence.
struct KeygenError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
