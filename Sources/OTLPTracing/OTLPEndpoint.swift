/// Where OTLP/HTTP trace exports go: `http://HOST[:PORT][/PATH]`, posted to `PATH/v1/traces`
/// (OpenTelemetry's base-endpoint rule; a URL already ending in `/v1/traces` is used as it is).
/// Plain http only: for https, export to a local OpenTelemetry Collector, which forwards over TLS.
public struct OTLPEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// OTLP/HTTP's default port.
    public static let defaultPort: UInt16 = 4318

    /// A name or an address (an IPv6 address without its brackets).
    public let host: String
    public let port: UInt16
    /// The request target, e.g. `/v1/traces`.
    public let path: String

    /// Why a URL is refused, in words for a usage message.
    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(ParseError) {
        let lowered = text.lowercased()
        if lowered.hasPrefix("https://") {
            throw ParseError(
                description: "'\(text)': https is not supported; export over http to a local OpenTelemetry Collector (it forwards over TLS), e.g. http://127.0.0.1:4318")
        }
        guard lowered.hasPrefix("http://") else {
            throw ParseError(description: "'\(text)' is not an http:// URL (e.g. http://127.0.0.1:4318)")
        }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw ParseError(description: "'\(text)': a URL has no spaces, control characters or non-ASCII characters")
        }
        let rest = Substring(text.dropFirst("http://".count))
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var remainder = rest.dropFirst(authority.count)
        guard !remainder.contains("?"), !remainder.contains("#") else {
            throw ParseError(description: "'\(text)': no query or fragment, only http://HOST[:PORT][/PATH]")
        }
        guard !authority.contains("@") else {
            throw ParseError(description: "'\(text)': no user or password, only http://HOST[:PORT][/PATH]")
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ParseError(description: "'\(text)': an IPv6 address needs its closing ']'")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError(description: "'\(text)': expected ':PORT' after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw ParseError(description: "'\(text)' names no host (e.g. http://127.0.0.1:4318)") }
        var port = Self.defaultPort
        if let portText {
            guard let number = UInt16(portText), number > 0 else {
                throw ParseError(description: "'\(text)': the port must be 1 to 65535, not '\(portText)'")
            }
            port = number
        }
        while remainder.hasSuffix("/") { remainder = remainder.dropLast() }
        self.host = String(host)
        self.port = port
        self.path = remainder.hasSuffix("/v1/traces") ? String(remainder) : String(remainder) + "/v1/traces"
    }

    /// The `Host` header's value.
    var hostHeader: String {
        (host.contains(":") ? "[\(host)]" : host) + (port == 80 ? "" : ":\(port)")
    }

    public var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)" }
}
