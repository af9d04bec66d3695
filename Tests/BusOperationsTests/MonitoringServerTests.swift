#if canImport(Glibc)
import Glibc
#endif
import BusOperations
import Foundation
import Logging
import ServiceLifecycle
import Testing
import TestSupport

// MonitoringHTTPService in this process, in a ServiceGroup as the nbus commands run it, asked over
// a raw loopback socket: what it answers to each method and path, and that its graceful shutdown
// is not held up by a client in the middle of a request.

/// A running server: its group, its port, and the task running the group.
private struct RunningServer {
    let group: ServiceGroup
    let port: Int
    let running: Task<Void, any Error>
}

private let silent = Logger(label: "monitoring-test") { _ in SwiftLogNoOpLogHandler() }

private func startServer() async throws -> RunningServer {
    let bound = Watched<String?>(nil)
    let service = MonitoringHTTPService(
        address: try HTTPListenAddress(parsing: "127.0.0.1:0"),
        routes: [
            ("/hello", { .text("hello\n") }),
            ("/big", { MonitoringResponse(contentType: "application/octet-stream", body: [UInt8](repeating: 0x2A, count: 65_536)) }),
        ],
        logger: silent,
        onListening: { address in bound.update { $0 = address } })
    let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: silent))
    let running = Task { try await group.run() }
    guard await bound.wait(until: { $0 != nil }), let address = bound.value,
        let port = address.split(separator: ":").last.flatMap({ Int($0) })
    else {
        running.cancel()
        throw TestSetupError("the server did not say where it listens")
    }
    return RunningServer(group: group, port: port, running: running)
}

/// Connects to 127.0.0.1:port (blocking; for `runBlocking`), reads bounded by 5 s.
private func connectBlocking(port: Int) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestSetupError("socket: errno \(errno)") }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(descriptor)
        throw TestSetupError("connect: errno \(errno)")
    }
    return descriptor
}

/// Sends `request` as it is and reads until the server closes the connection (or 5 s of silence).
private func exchange(port: Int, _ request: String) async throws -> String {
    try await runBlocking {
        let descriptor = try connectBlocking(port: port)
        defer { close(descriptor) }
        let bytes = Array(request.utf8)
        guard send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
            throw TestSetupError("send: errno \(errno)")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

@Suite("BusOperations: the monitoring HTTP server (in process, raw sockets)", .serialized, .timeLimit(.minutes(1)))
struct MonitoringServerTests {
    @Test("GET and HEAD answered, another method 405 with Allow, an unknown path 404: four requests on one connection")
    func methodsAndPaths() async throws {
        let server = try await startServer()
        defer { server.running.cancel() }
        let answer = try await exchange(
            port: server.port,
            "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n" + "HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                + "POST /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
                + "GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        let lower = answer.lowercased()
        // A status line may follow a body directly ("hello\nHTTP/1.1 200 OK").
        let statuses = answer.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        #expect(statuses == ["200", "200", "405", "404"], "\(answer)")
        // The body once: HEAD has the same headers and none.
        #expect(answer.components(separatedBy: "hello\n").count == 2, "\(answer)")
        #expect(lower.components(separatedBy: "content-type: text/plain; charset=utf-8\r\n").count >= 3, "\(answer)")
        #expect(lower.components(separatedBy: "content-length: 6\r\n").count == 3, "\(answer)")
        #expect(lower.contains("allow: get, head\r\n"), "\(answer)")
        await server.group.triggerGracefulShutdown()
        try await server.running.value(within: .seconds(5), "the server's group")
    }

    @Test("a head past 8 KiB: 400 and the connection closed")
    func oversizedHead() async throws {
        let server = try await startServer()
        defer { server.running.cancel() }
        let answer = try await exchange(
            port: server.port, "GET /hello HTTP/1.1\r\nX: " + String(repeating: "a", count: 9_000) + "\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer.prefix(300))")
        await server.group.triggerGracefulShutdown()
        try await server.running.value(within: .seconds(5), "the server's group")
    }

    @Test("graceful shutdown ends the server within a second while a client is half-way through a request")
    func shutdownIsNotHeldByAClient() async throws {
        let server = try await startServer()
        defer { server.running.cancel() }
        let descriptor = try await runBlocking { () throws -> Int32 in
            let descriptor = try connectBlocking(port: server.port)
            let partial = Array("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nabc".utf8)
            _ = send(descriptor, partial, partial.count, Int32(MSG_NOSIGNAL))
            return descriptor
        }
        defer { close(descriptor) }
        // The request was answered (its head was enough): the server has taken the connection.
        let head = try await runBlocking { () -> String in
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            return String(decoding: buffer[0..<max(0, count)], as: UTF8.self)
        }
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        let start = ContinuousClock.now
        await server.group.triggerGracefulShutdown()
        try await server.running.value(within: .seconds(5), "the server's group")
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test("graceful shutdown ends the server within a second while a client does not read its responses (Hummingbird's own waits for them)")
    func shutdownIsNotHeldByAClientThatDoesNotRead() async throws {
        let server = try await startServer()
        defer { server.running.cancel() }
        // 300 pipelined requests for 64 KiB each: 19 MB of answers, far more than the socket
        // buffers between the two hold, so the server is stuck writing one of them.
        let descriptor = try await runBlocking { () throws -> Int32 in
            let descriptor = try connectBlocking(port: server.port)
            let requests = Array(String(repeating: "GET /big HTTP/1.1\r\nHost: t\r\n\r\n", count: 300).utf8)
            _ = send(descriptor, requests, requests.count, Int32(MSG_NOSIGNAL))
            return descriptor
        }
        defer { close(descriptor) }
        // What has arrived unread: past one answer and a half (the receive buffer of a socket
        // that is not read stays near 128 KiB), the server is writing the second of 300.
        let backlog = try await runBlocking { () -> Int32 in
            let deadline = ContinuousClock.now + .seconds(10)
            var unread: Int32 = 0
            while ContinuousClock.now < deadline {
                _ = ioctl(descriptor, UInt(FIONREAD), &unread)
                if unread > 98_304 { break }
                usleep(10_000)
            }
            return unread
        }
        #expect(backlog > 98_304, "the client has \(backlog) bytes unread")
        let start = ContinuousClock.now
        await server.group.triggerGracefulShutdown()
        try await server.running.value(within: .seconds(15), "the server's group")
        #expect(ContinuousClock.now - start < .seconds(1))
    }
}
