#if canImport(Glibc)
import Glibc
#endif

/// Where a monitoring HTTP server listens: an IP literal and a port (0: any free port).
///
/// Written `PORT` (loopback, 127.0.0.1), `HOST:PORT` or `[IPv6]:PORT`; `localhost` is 127.0.0.1.
/// Only IP literals: a name would be resolved behind the operator's back, and a monitoring port
/// is exposed only when asked for by address (`0.0.0.0:9464`).
public struct HTTPListenAddress: Hashable, Sendable, CustomStringConvertible {
    /// The IP literal (`127.0.0.1`, `::1`).
    public var host: String
    /// The port; 0 lets the system choose one.
    public var port: UInt16
    /// Whether `host` is IPv6.
    public var isIPv6: Bool

    /// Parses `PORT`, `HOST:PORT` or `[IPv6]:PORT`.
    public init(parsing text: String) throws(HTTPListenAddressError) {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw HTTPListenAddressError(text: text, reason: "an IPv6 address is written [ADDRESS]:PORT")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host == "localhost" { host = "127.0.0.1" }
        }
        guard let port = UInt16(portText) else {
            throw HTTPListenAddressError(text: text, reason: "the port must be a number from 0 to 65535")
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            isIPv6 = false
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            isIPv6 = true
        } else {
            throw HTTPListenAddressError(
                text: text, reason: "'\(host)' is not an IP address (use 127.0.0.1, 0.0.0.0, ::1 or [::1]:PORT)")
        }
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, with brackets around IPv6.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Binds a TCP socket to this address and closes it again, so that a command finds out before
    /// it starts working (before a broker says it is ready, before a publisher posts) that its
    /// `--http` cannot listen there (an address not on this machine, a port taken). The server
    /// binds again a moment later; a port taken in between is still reported then.
    public func checkListenable() throws(MonitoringServerError) {
        let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw failure(errno) }
        defer { close(descriptor) }
        // As a listening server does: a port in TIME_WAIT from an earlier run is free to use.
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let result: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            result = Self.bind(descriptor, to: &address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            result = Self.bind(descriptor, to: &address)
        }
        if result != 0 { throw failure(errno) }
    }

    /// `bind(2)` with a `sockaddr_in` or `sockaddr_in6`.
    private static func bind<Address>(_ descriptor: Int32, to address: inout Address) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
    }

    private func failure(_ code: Int32) -> MonitoringServerError {
        MonitoringServerError(address: self, reason: "\(String(cString: strerror(code))) (errno \(code))")
    }
}

/// An `--http` value that is not an address to listen on.
public struct HTTPListenAddressError: Error, Hashable, CustomStringConvertible {
    /// What was given.
    public var text: String
    /// Why it is refused.
    public var reason: String

    public var description: String { "'\(text)' is not an address to listen on: \(reason)" }
}
