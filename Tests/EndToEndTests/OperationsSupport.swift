#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ToolSupport
import Testing
import TestSupport

// Support for the monitoring tests: a plain HTTP/1.1 GET over a loopback socket (the server under
// test is real; so is this client, a socket and a request line), and finding Debian's tools.

/// A response: status and body.
struct HTTPReply: Sendable {
    var status: Int
    var body: String
}

/// `GET path` from 127.0.0.1:port, with `Connection: close`; throws when it cannot connect.
func httpGet(port: Int, _ path: String) throws -> HTTPReply {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw TestSetupError("connect to 127.0.0.1:\(port): errno \(errno)") }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
    guard write(fd, request, request.count) == request.count else { throw TestSetupError("write: errno \(errno)") }
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        data += buffer[0..<count]
    }
    let text = String(decoding: data, as: UTF8.self)
    guard let headerEnd = text.range(of: "\r\n\r\n"), let statusText = text.split(separator: " ").dropFirst().first,
        let status = Int(statusText)
    else { throw TestSetupError("not an HTTP response: \(text.prefix(200))") }
    return HTTPReply(status: status, body: String(text[headerEnd.upperBound...]))
}

/// Asks `probe` until it returns a value, every 50 ms, for at most `timeout`: for state that
/// changes inside another process with no event to wait for (a connection the broker has noticed
/// closing). Records nothing; returns nil when time ran out.
func eventually<T>(timeout: Duration = standardWait, _ probe: () throws -> T?) async rethrows -> T? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let value = try probe() { return value }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return nil
}

/// The port of the first `monitoring on http://127.0.0.1:PORT` log line in `text`.
func monitoringPort(in text: String) -> Int? {
    guard let range = text.range(of: "monitoring on http://127.0.0.1:") else { return nil }
    return Int(text[range.upperBound...].prefix { $0.isNumber })
}

/// A Debian tool on PATH or in /usr/bin, /usr/sbin; nil when missing.
func findTool(_ name: String) -> URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/bin"] {
        let candidate = folder + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
    }
    return nil
}

/// Runs `tool arguments` with `input` on stdin; returns its exit status and stdout+stderr.
/// Runs on a thread of its own (`runBlocking`): it blocks until the tool exits.
func runTool(_ tool: URL, _ arguments: [String], input: String = "") async throws -> (status: Int32, output: String) {
    try await runBlocking { try runToolBlocking(tool, arguments, input: input) }
}

private func runToolBlocking(_ tool: URL, _ arguments: [String], input: String) throws -> (status: Int32, output: String) {
    try SpawnedProcess.run(tool.path, arguments, input: input, mergingStandardError: true)
}

/// The value of the sample `name` (with its labels, as written) in a Prometheus exposition.
func metricValue(_ exposition: String, _ sample: String) -> Double? {
    for line in exposition.split(separator: "\n") where line.hasPrefix(sample + " ") {
        return Double(line.dropFirst(sample.count + 1))
    }
    return nil
}
