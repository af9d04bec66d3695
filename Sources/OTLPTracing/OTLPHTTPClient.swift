#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking HTTP/1.1 client for OTLP/HTTP: one POST per connection, every step bounded
/// by a deadline (poll on non-blocking sockets). Runs on the exporter's own thread, never on the
/// bus's or Swift's cooperative pool.
struct OTLPHTTPClient {
    let endpoint: OTLPEndpoint
    let userAgent: String

    /// What a POST came to: the HTTP status, or why there was none.
    enum Outcome: Equatable {
        case status(Int)
        case failed(String)
    }

    func post(_ body: [UInt8], contentType: String, timeoutMilliseconds: Int) -> Outcome {
        let deadline = Self.now() + max(1, timeoutMilliseconds)
        var descriptor: Int32 = -1
        switch connect(deadline: deadline) {
        case .success(let connected): descriptor = connected
        case .failure(let failure): return .failed(failure.reason)
        }
        defer { close(descriptor) }
        let head =
            "POST \(endpoint.path) HTTP/1.1\r\nHost: \(endpoint.hostHeader)\r\nUser-Agent: \(userAgent)\r\n"
            + "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        if let failure = send(Array(head.utf8) + body, on: descriptor, deadline: deadline) { return .failed(failure) }
        return readStatus(from: descriptor, deadline: deadline)
    }

    private struct Failure: Error {
        let reason: String
    }

    private func connect(deadline: Int) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &list)
        guard resolved == 0, let first = list else {
            return .failure(Failure(reason: "cannot resolve \(endpoint.host): \(String(cString: gai_strerror(resolved)))"))
        }
        defer { freeaddrinfo(list) }
        var reason = "no address for \(endpoint.host)"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let descriptor = socket(
                address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else {
                reason = "socket: \(Self.errorText(errno))"
                continue
            }
            if Glibc.connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return .success(descriptor) }
            guard errno == EINPROGRESS else {
                reason = "connect to \(endpoint.host):\(endpoint.port): \(Self.errorText(errno))"
                close(descriptor)
                continue
            }
            guard Self.wait(descriptor, for: Int16(POLLOUT), deadline: deadline) else {
                reason = "connect to \(endpoint.host):\(endpoint.port): timed out"
                close(descriptor)
                continue
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 { return .success(descriptor) }
            reason = "connect to \(endpoint.host):\(endpoint.port): \(Self.errorText(error))"
            close(descriptor)
        }
        return .failure(Failure(reason: reason))
    }

    private func send(_ bytes: [UInt8], on descriptor: Int32, deadline: Int) -> String? {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return Glibc.send(descriptor, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                guard Self.wait(descriptor, for: Int16(POLLOUT), deadline: deadline) else { return "sending: timed out" }
            } else {
                return "sending: \(Self.errorText(errno))"
            }
        }
        return nil
    }

    /// Reads up to the end of the response's head (at most 16 KiB) and returns its status code.
    private func readStatus(from descriptor: Int32, deadline: Int) -> Outcome {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while received.count < 16_384 {
            if let line = received.firstIndex(of: UInt8(ascii: "\n")) {
                // "HTTP/1.1 200 OK": the status is the second word.
                let words = String(decoding: received[..<line], as: UTF8.self).split(separator: " ")
                guard words.count >= 2, words[0].hasPrefix("HTTP/"), let code = Int(words[1]) else {
                    return .failed("not an HTTP response")
                }
                return .status(code)
            }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
            } else if count == 0 {
                return .failed("the connection closed before a response")
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard Self.wait(descriptor, for: Int16(POLLIN), deadline: deadline) else { return .failed("no response: timed out") }
            } else {
                return .failed("receiving: \(Self.errorText(errno))")
            }
        }
        return .failed("a response line over 16 KiB")
    }

    /// Waits until `descriptor` is ready for `events` or `deadline` (milliseconds) passes.
    private static func wait(_ descriptor: Int32, for events: Int16, deadline: Int) -> Bool {
        while true {
            let left = deadline - now()
            guard left > 0 else { return false }
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(min(left, Int(Int32.max))))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    /// Monotonic milliseconds.
    static func now() -> Int {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return spec.tv_sec * 1_000 + spec.tv_nsec / 1_000_000
    }

    private static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
