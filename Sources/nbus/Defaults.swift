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
    // A FRONTEND,BACKEND pair given where one endpoint goes (libzmq would take the rest as a host).
    if endpoint.contains(",") { return .comma(option, endpoint) }
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

/// The same for a message already written (`naming(_:options:)`).
func fail(_ command: String, _ message: String, code: Int32 = 1) -> ExitCode {
    CommandLog.logger(command).error("\(message)")
    return ExitCode(code)
}

/// `error` as a message, and when an endpoint is in use, which option named it and what to do:
/// `options` pairs each endpoint option (`--frontend`) with what it was given.
func naming(_ error: any Error, options: [(option: String, endpoints: [String])]) -> String {
    let text = "\(error)"
    guard text.contains("Address already in use") else { return text }
    let option = options.first { $0.endpoints.contains { text.contains($0) } }?.option
    return text + ": another process listens there (an nbus broker already running?): stop it, or give "
        + (option.map { "\($0) another endpoint" } ?? "another endpoint")
}

/// `text` for an error message on a terminal: control characters (an ESC starting a terminal
/// sequence, a newline that would forge a second log line) escaped as in JSON (`\u001b`), the
/// rest as is (`JSONString.quoted` without its quotes).
func displayed(_ text: String) -> String {
    String(JSONString.quoted(text).dropFirst().dropLast())
}
