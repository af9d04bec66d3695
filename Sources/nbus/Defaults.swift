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

    /// Refuses endpoints libzmq would take wrongly (a tcp port above 65535 wraps around) or that
    /// no other process can reach (inproc://).
    func validate() throws {
        for endpoint in bind { try validateEndpoint(endpoint, option: "--bind") }
        for endpoint in connect { try validateEndpoint(endpoint, option: "--connect") }
    }

    func attachments(defaultConnect: String) -> [Attachment] {
        let attachments = bind.map(Attachment.bind) + connect.map(Attachment.connect)
        return attachments.isEmpty ? [.connect(defaultConnect)] : attachments
    }
}

/// Refuses an endpoint argument libzmq would misread, or one no other process can reach, naming
/// the option (exit 64).
func validateEndpoint(_ endpoint: String, option: String) throws {
    // inproc:// joins only sockets of one ZeroMQ context, inside one process: a command binding or
    // connecting there would wait for peers that can never come.
    if endpoint.lowercased().hasPrefix("inproc://") {
        throw ValidationError(
            "\(option) \(endpoint): inproc:// endpoints are reachable only inside one process; "
                + "use ipc:// (this machine) or tcp:// to reach other nbus processes")
    }
    // What libzmq would refuse with a bare EINVAL at bind or connect: say what is expected.
    let lowered = endpoint.lowercased()
    guard lowered.hasPrefix("tcp://") || lowered.hasPrefix("ipc://") else {
        throw ValidationError(
            "\(option) \(endpoint): an endpoint is tcp://HOST:PORT (tcp://127.0.0.1:5550, tcp://*:5550) "
                + "or ipc:///PATH (ipc:///tmp/nbus.sock)")
    }
    if lowered.hasPrefix("tcp://") {
        // The destination is the last `;`-separated part (`tcp://SOURCE;HOST:PORT` names a source).
        let destination = endpoint.dropFirst("tcp://".count).split(separator: ";", omittingEmptySubsequences: false).last ?? ""
        guard let colon = destination.lastIndex(of: ":"), colon != destination.startIndex else {
            throw ValidationError("\(option) \(endpoint): a tcp endpoint needs HOST:PORT (tcp://127.0.0.1:5550, tcp://*:5550)")
        }
        let port = destination[destination.index(after: colon)...]
        guard port == "*" || (!port.isEmpty && port.allSatisfy({ $0.isASCII && $0.isNumber })) else {
            throw ValidationError(
                "\(option) \(endpoint): the port must be a number from 0 to 65535 (or * to pick a free one when binding), not '\(port)'")
        }
    } else if endpoint.count == "ipc://".count {
        throw ValidationError("\(option) \(endpoint): an ipc endpoint needs a path (ipc:///tmp/nbus.sock)")
    }
    if let port = TCPEndpoint.outOfRangePort(in: endpoint) {
        throw ValidationError("\(option) \(endpoint): port \(port) is out of range (0-65535)")
    }
}

/// Turns a `BusError` into a one-line error log (`nbus COMMAND: ...`) and a non-zero exit.
func fail(_ command: String, _ error: any Error, code: Int32 = 1) -> ExitCode {
    CommandLog.logger(command).error("\(error)")
    return ExitCode(code)
}

/// Prints to standard error.
func printError(_ text: String) {
    var standardError = StandardError()
    print(text, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileWriter.standardError.write(string)
    }
}

/// `text` for an error message on a terminal: control characters (an ESC starting a terminal
/// sequence, a newline that would forge a second log line) escaped as in JSON (`\u001b`), the
/// rest as is (`JSONString.quoted` without its quotes).
func displayed(_ text: String) -> String {
    String(JSONString.quoted(text).dropFirst().dropLast())
}
