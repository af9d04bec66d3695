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
}

/// An `--http` value that is not an address to listen on.
public struct HTTPListenAddressError: Error, Hashable, CustomStringConvertible {
    /// What was given.
    public var text: String
    /// Why it is refused.
    public var reason: String

    public var description: String { "'\(text)' is not an address to listen on: \(reason)" }
}
