import ArgumentParser
import Foundation
import NotificationBus
import ZeroMQ

/// `--curve-secret` and `--curve-server-key`, shared by publish and subscribe; each command adds
/// its own allow-list option for when it binds.
struct CurveOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "This process's secret key file (NAME.key from `nbus keygen`, not NAME.pub); turns CURVE on. Must be mode 0600.",
            valueName: "file"))
    var curveSecret: String?

    @Option(
        help: ArgumentHelp(
            "With --connect: the server's (broker's) public key file; only that server is talked to.",
            valueName: "file"))
    var curveServerKey: String?

    /// Checks the combination with the attachments and the command's allow-list option (`allowFlag`,
    /// given or not); file contents are checked when loaded.
    func validate(endpoints: EndpointOptions, allowFlag: String, allowList: String?) throws {
        guard let _ = curveSecret else {
            if curveServerKey != nil { throw ValidationError("--curve-server-key needs --curve-secret too") }
            if allowList != nil { throw ValidationError("\(allowFlag) needs --curve-secret too") }
            return
        }
        let binds = !endpoints.bind.isEmpty
        let connects = !endpoints.connect.isEmpty || !binds
        if binds && connects {
            throw ValidationError("with CURVE, use either --bind (a CURVE server) or --connect (a client), not both")
        }
        if connects {
            guard curveServerKey != nil else {
                throw ValidationError("--curve-secret with --connect needs --curve-server-key (the server's .pub file)")
            }
            if allowList != nil { throw ValidationError("\(allowFlag) is for --bind (a CURVE server)") }
        } else {
            guard allowList != nil else {
                throw ValidationError("--curve-secret with --bind needs \(allowFlag) (the folder of admitted .pub files)")
            }
            if curveServerKey != nil { throw ValidationError("--curve-server-key is for --connect (a CURVE client)") }
        }
    }

    /// Loads the key files into `configuration`: client keys for connecting, server keys and the
    /// allow list for binding. Authentication events of a binding server are logged on stderr.
    /// Throws `CurveKeyError`, or `PublicKeyGivenAsSecret` when --curve-secret names a public key
    /// file (checked first: its permission bits are not the problem).
    func apply(to configuration: inout BusConfiguration, allowList: String?, command: String) throws {
        guard let curveSecret else { return }
        if Self.isPublicKeyFile(curveSecret) { throw PublicKeyGivenAsSecret(path: curveSecret) }
        let keyPair = try CurveKeyFile.readKeyPair(at: curveSecret)
        if let curveServerKey {
            let serverKey = try CurveKeyFile.readPublicKey(at: curveServerKey)
            configuration.curve = try CurveClientSecurity(keyPair: keyPair, serverPublicKey: serverKey)
        } else if let allowList {
            let allowed = try CurveAllowList(directory: allowList)
            if allowed.isEmpty { logLine(.warning, command, "no *.pub file in \(allowList): every client will be refused") }
            configuration.curveServer = CurveServerSecurity(
                keyPair: keyPair, allowedClients: allowed,
                onAuthentication: { event in event.log(to: CommandLog.logger(command)) })
        }
    }
}

extension CurveOptions {
    /// Whether the file at `path` is a public key file: a valid key file with a `public-key` line
    /// and no `secret-key` line (what `nbus keygen` writes to NAME.pub). A file holding just a bare
    /// key could be either, so it is not one.
    static func isPublicKeyFile(_ path: String) -> Bool {
        // A question, not a check: a file that is unreadable or holds no public key is simply not
        // a public key file, and the secret key's own loading reports what is wrong with it.
        guard (try? CurveKeyFile.readPublicKey(at: path)) != nil,
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return false }
        let fields = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return fields.contains { $0.hasPrefix("public-key") } && !fields.contains { $0.hasPrefix("secret-key") }
    }
}

/// `--curve-secret` names a public key file (`NAME.pub`), a mix-up with its `NAME.key`.
struct PublicKeyGivenAsSecret: Error, CustomStringConvertible {
    /// The file given.
    let path: String

    var description: String {
        let suffix = ".\(CurveKeyFile.publicKeyExtension)"
        let sibling = path.hasSuffix(suffix) ? String(path.dropLast(suffix.count)) + ".\(CurveKeyFile.secretKeyExtension)" : nil
        let hint = sibling.map { "probably \($0), written by `nbus keygen` with it" } ?? "NAME.key from `nbus keygen`"
        return "\(path) is a public key file; --curve-secret needs the secret key file (\(hint))"
    }
}
