import ArgumentParser
import BusOperations
import Logging
import NotificationBus
import ZeroMQ

/// Where `nbus broker` listens by default, and so where `publish` and `subscribe` connect.
enum DefaultEndpoints {
    static let frontend = "tcp://127.0.0.1:5550"
    static let backend = "tcp://127.0.0.1:5551"
}

/// `--bind`/`--connect`, shared by publish and subscribe.
struct EndpointOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Bind this endpoint (direct topology: others connect here). Repeatable.", valueName: "endpoint"))
    var bind: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Connect to this endpoint (a broker, or a binding peer). Repeatable: several brokers are one bus with no single point of failure (every notification goes through each; a subscriber keeps the first copy).",
            valueName: "endpoint"))
    var connect: [String] = []

    /// Refuses endpoints that cannot work (`UnusableEndpoint`: exit 2).
    func validate() throws {
        for endpoint in bind { try validateEndpoint(endpoint, option: "--bind") }
        for endpoint in connect { try validateEndpoint(endpoint, option: "--connect", connecting: true) }
    }

    func attachments(defaultConnect: String) -> [Attachment] {
        let attachments = bind.map(Attachment.bind) + connect.map(Attachment.connect)
        return attachments.isEmpty ? [.connect(defaultConnect)] : attachments
    }
}

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

/// The subcommand this process runs (`publish`, `broker`...), for a message written before its
/// logger is set up: the first argument that is not an option.
var invokedCommand: String {
    CommandLine.arguments.dropFirst().first { !$0.hasPrefix("-") } ?? ""
}

/// Refuses an endpoint that cannot work (`UnusableEndpoint`): logs why, naming the option, and
/// throws `ExitCode(UnusableEndpoint.exitStatus)`. `connecting`: the endpoint is dialled, so it
/// needs a real port.
func validateEndpoint(_ endpoint: String, option: String, connecting: Bool = false) throws {
    guard let problem = endpointProblem(endpoint, option: option, connecting: connecting) else { return }
    CommandLog.logger(invokedCommand).error("\(problem)")
    throw ExitCode(UnusableEndpoint.exitStatus)
}

/// What is wrong with `endpoint`, or nil.
func endpointProblem(_ endpoint: String, option: String, connecting: Bool) -> UnusableEndpoint? {
    let lowered = endpoint.lowercased()
    // inproc:// joins only sockets of one ZeroMQ context, inside one process: a command binding or
    // connecting there would wait for peers that can never come.
    if lowered.hasPrefix("inproc://") { return .inproc(option, endpoint) }
    // What libzmq would refuse with a bare EINVAL at bind or connect: say what is expected.
    guard lowered.hasPrefix("tcp://") || lowered.hasPrefix("ipc://") else { return .unknownTransport(option, endpoint) }
    if lowered.hasPrefix("tcp://") {
        // The destination is the last `;`-separated part (`tcp://SOURCE;HOST:PORT` names a source).
        let destination = endpoint.dropFirst("tcp://".count).split(separator: ";", omittingEmptySubsequences: false).last ?? ""
        guard let colon = destination.lastIndex(of: ":"), colon != destination.startIndex else {
            return .missingPort(option, endpoint)
        }
        let port = destination[destination.index(after: colon)...]
        guard port == "*" || (!port.isEmpty && port.allSatisfy({ $0.isASCII && $0.isNumber })) else {
            return .badPort(option, endpoint, port)
        }
        if let port = TCPEndpoint.outOfRangePort(in: endpoint) { return .portOutOfRange(option, endpoint, port) }
        if connecting && (port == "*" || Int(port) == 0) { return .wildcardPort(option, endpoint) }
        if let problem = TCPEndpoint.hostProblem(in: endpoint) { return .badHost(option, endpoint, problem) }
    } else {
        let path = endpoint.dropFirst("ipc://".count)
        if path.isEmpty { return .missingPath(option, endpoint) }
        // sockaddr_un's 108 bytes, one for the NUL; libzmq refuses longer with ENAMETOOLONG.
        if path.utf8.count > 107 { return .pathTooLong(option, endpoint, path.utf8.count) }
    }
    return nil
}

/// Turns a `BusError` into a one-line error log (`nbus COMMAND: ...`) and a non-zero exit.
func fail(_ command: String, _ error: any Error, code: Int32 = 1) -> ExitCode {
    CommandLog.logger(command).error("\(error)")
    return ExitCode(code)
}

/// `text` for an error message on a terminal: control characters (an ESC starting a terminal
/// sequence, a newline that would forge a second log line) escaped as in JSON (`\u001b`), the
/// rest as is (`JSONString.quoted` without its quotes).
func displayed(_ text: String) -> String {
    String(JSONString.quoted(text).dropFirst().dropLast())
}
