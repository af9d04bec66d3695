import ArgumentParser
import NotificationBus
import ZeroMQ

/// `--curve-secret` and `--curve-server-key`, shared by publish and subscribe; each command adds
/// its own allow-list option for when it binds.
struct CurveOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "This process's secret key file (from `nbus keygen`); turns CURVE on. Must be mode 0600.",
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
    func apply(to configuration: inout BusConfiguration, allowList: String?, command: String) throws(CurveKeyError) {
        guard let curveSecret else { return }
        let keyPair = try CurveKeyFile.readKeyPair(at: curveSecret)
        if let curveServerKey {
            let serverKey = try CurveKeyFile.readPublicKey(at: curveServerKey)
            configuration.curve = try CurveClientSecurity(keyPair: keyPair, serverPublicKey: serverKey)
        } else if let allowList {
            let allowed = try CurveAllowList(directory: allowList)
            if allowed.isEmpty { printError("nbus \(command): warning: no *.pub file in \(allowList): every client will be refused") }
            configuration.curveServer = CurveServerSecurity(
                keyPair: keyPair, allowedClients: allowed,
                onAuthentication: { event in printError("nbus \(command): \(event)") })
        }
    }
}

/// What `publish` and `subscribe` print when a CURVE server refused their key.
func refusedKeyMessage(_ command: String, role: String, curve: CurveOptions) -> String {
    let key = curve.curveSecret.map { " (\($0))" } ?? ""
    return "nbus \(command): the server refused this \(role)'s key\(key): its .pub file must be in the broker's "
        + "--allow-\(role)s folder (or the binding peer's)"
}

/// A note on failed CURVE handshakes for a summary or timeout message; empty when none failed.
func handshakeNote(_ stats: BusStats) -> String {
    guard stats.handshakesRefused + stats.handshakesFailed > 0 else { return "" }
    var note = "; CURVE handshakes refused \(stats.handshakesRefused), failed \(stats.handshakesFailed)"
    switch stats.lastHandshakeFailure {
    case .refused?: note += " (the server does not admit this key)"
    case let last?: note += " (last: \(last); is --curve-server-key the server's key, and does it use CURVE?)"
    case nil: break
    }
    return note
}
