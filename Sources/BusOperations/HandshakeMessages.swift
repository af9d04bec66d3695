import NotificationBus

/// What a command (`publish`, `subscribe`, `request`, `reply`) says when a CURVE server refused
/// it; `curveSecret` is its `--curve-secret`, if any.
/// `allowFolders` names where the key must be listed (default: the role's own `--allow-ROLEs`
/// folder, which a binding peer has too).
package func refusedKeyMessage(
    _ command: String, role: String, curveSecret: String?, stats: BusStats, allowFolders: String? = nil
) -> String {
    if stats.handshakeMechanismMismatches > 0 {
        return curveSecret == nil
            ? "nbus \(command): the server uses CURVE and refuses plaintext peers: give --curve-secret (this "
                + "\(role)'s NAME.key) and --curve-server-key (the server's .pub); see nbus keygen"
            : "nbus \(command): the server does not use CURVE (a plaintext broker or peer?): start it with "
                + "--curve-secret, or leave --curve-secret out here"
    }
    if stats.handshakesRefused == 0 {
        // Dropped connections only (the bus gives up after a run of them): the server hung up
        // before saying why, as a server of the other mechanism or with another key does.
        let last = stats.lastHandshakeFailure.map { "; last: \($0)" } ?? ""
        return curveSecret == nil
            ? "nbus \(command): the server probably uses CURVE and refuses plaintext peers: it hung up on every "
                + "handshake (\(stats.handshakesFailed) failed\(last)); give --curve-secret (this \(role)'s NAME.key) "
                + "and --curve-server-key (the server's .pub); see nbus keygen"
            : "nbus \(command): the server does not use CURVE, or --curve-server-key is not its public key: it "
                + "hung up on every handshake (\(stats.handshakesFailed) failed\(last))"
    }
    let key = curveSecret.map { " (\($0))" } ?? ""
    return "nbus \(command): the server refused this \(role)'s key\(key): its .pub file must be in the broker's "
        + (allowFolders ?? "--allow-\(role)s folder (or the binding peer's)")
}

/// A note on failed CURVE handshakes for a summary or timeout message; empty when none failed.
package func handshakeNote(_ stats: BusStats, usingCurve: Bool = true) -> String {
    guard stats.handshakesRefused + stats.handshakesFailed > 0 else { return "" }
    guard usingCurve else {
        // Plaintext: a failed handshake is almost always a CURVE server at the other end.
        var note = "; handshakes failed \(stats.handshakesFailed)"
        if stats.handshakeMechanismMismatches > 0 {
            note += " (the server uses CURVE: give --curve-secret and --curve-server-key; see nbus keygen)"
        } else if let last = stats.lastHandshakeFailure {
            note += " (last: \(last))"
        }
        return note
    }
    var note = "; CURVE handshakes refused \(stats.handshakesRefused), failed \(stats.handshakesFailed)"
    switch stats.lastHandshakeFailure {
    case .refused?: note += " (the server does not admit this key)"
    case _? where stats.handshakeMechanismMismatches > 0: note += " (the server does not use CURVE)"
    case let last?: note += " (last: \(last); is --curve-server-key the server's key, and does it use CURVE?)"
    case nil: break
    }
    return note
}
