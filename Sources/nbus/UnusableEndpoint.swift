/// An endpoint argument that cannot work: one libzmq would misread (a port above 65535 wraps
/// around), refuse with a bare "Invalid argument", or take and retry for ever in silence (a host
/// that can be no address: `tcp://256.1.1.1:1`), or one no other process can reach (inproc://).
/// Every command taking endpoints refuses it before opening anything, naming the option, and
/// exits `exitStatus` (an unusable endpoint).
struct UnusableEndpoint: Error, CustomStringConvertible {
    /// The option, e.g. `--connect`.
    let option: String
    let endpoint: String
    /// Why, and what would do.
    let reason: String

    var description: String { "\(option) \(displayed(endpoint)): \(reason)" }

    /// The exit status of a command given one (what a bind or connect that fails exits with).
    static let exitStatus: Int32 = 2

    static func inproc(_ option: String, _ endpoint: String) -> Self {
        Self(
            option: option, endpoint: endpoint,
            reason: "inproc:// endpoints are reachable only inside one process; use ipc:// (this machine) or tcp:// to reach other nbus processes")
    }

    static func comma(_ option: String, _ endpoint: String) -> Self {
        Self(
            option: option, endpoint: endpoint,
            reason: "one endpoint has no comma: publish --connect takes a broker's frontend (tcp://127.0.0.1:5550) and subscribe --connect its backend (tcp://127.0.0.1:5551), repeated for several brokers; FRONTEND,BACKEND pairs are for request and reply")
    }

    static func unknownTransport(_ option: String, _ endpoint: String) -> Self {
        Self(
            option: option, endpoint: endpoint,
            reason: "an endpoint is tcp://HOST:PORT (tcp://127.0.0.1:5550, tcp://*:5550) or ipc:///PATH (ipc:///tmp/nbus.sock)")
    }

    static func missingPort(_ option: String, _ endpoint: String) -> Self {
        Self(option: option, endpoint: endpoint, reason: "a tcp endpoint needs HOST:PORT (tcp://127.0.0.1:5550, tcp://*:5550)")
    }

    static func badPort(_ option: String, _ endpoint: String, _ port: Substring) -> Self {
        Self(
            option: option, endpoint: endpoint,
            reason: "the port must be a number from 0 to 65535 (or * to pick a free one when binding), not '\(displayed(String(port)))'")
    }

    static func portOutOfRange(_ option: String, _ endpoint: String, _ port: String) -> Self {
        Self(option: option, endpoint: endpoint, reason: "port \(port) is out of range (0-65535)")
    }

    static func wildcardPort(_ option: String, _ endpoint: String) -> Self {
        Self(
            option: option, endpoint: endpoint,
            reason: "port * or 0 picks a free port when binding; a connection needs the port its peer listens on")
    }

    static func badHost(_ option: String, _ endpoint: String, _ problem: String) -> Self {
        Self(option: option, endpoint: endpoint, reason: "\(problem): no address to reach (libzmq would retry it for ever)")
    }

    static func missingPath(_ option: String, _ endpoint: String) -> Self {
        Self(option: option, endpoint: endpoint, reason: "an ipc endpoint needs a path (ipc:///tmp/nbus.sock)")
    }

    static func pathTooLong(_ option: String, _ endpoint: String, _ bytes: Int) -> Self {
        Self(
            option: option, endpoint: endpoint,
            reason: "the path is \(bytes) bytes, longer than a Unix socket's 107: pick a shorter one")
    }
}
