#if canImport(Glibc)
import Glibc
#endif
import CZeroMQ

/// Checks for `tcp://` endpoints. libzmq 4.3 parses the port with `strtoul` and keeps its low 16
/// bits: `tcp://127.0.0.1:99999` binds port 34463 without a word. `Socket.bind`/`connect` refuse.
///
/// `package`: `Socket.bind`/`connect` apply these checks for every user; nbus calls them early
/// to word a bad option in its own terms.
package enum TCPEndpoint {
    /// The port of a `tcp://` endpoint that is a number above 65535 (of any `;`-separated address:
    /// a connect may name its source), or nil. `*` and other forms are libzmq's to judge.
    package static func outOfRangePort(in endpoint: String) -> String? {
        guard endpoint.hasPrefix("tcp://") else { return nil }
        for address in endpoint.dropFirst("tcp://".count).split(separator: ";") {
            guard let colon = address.lastIndex(of: ":") else { continue }
            let port = address[address.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
            if port.count > 18 || (Int(port) ?? Int.max) > 65_535 { return String(port) }
        }
        return nil
    }

    /// Throws `EINVAL` for `operation`, naming the endpoint, when its port is out of range.
    static func checkPort(of endpoint: String, operation: String) throws(ZMQError) {
        if outOfRangePort(in: endpoint) != nil {
            throw ZMQError(code: czmq_einval(), operation: operation, endpoint: endpoint)
        }
    }
}

extension TCPEndpoint {
    /// Why the host of a `tcp://` endpoint (its destination: the last `;`-separated address) can
    /// name no address, or nil when it may: libzmq resolves a host it cannot parse as a name, and
    /// a connect to one that resolves to nothing retries for ever in silence
    /// (`tcp://256.1.1.1:1`). Only what is surely wrong is refused: a host of digits and dots that
    /// is no IPv4 address, a bracketed one that is no IPv6 address, and a name with characters or
    /// labels no host name has (RFC 1123: letters, digits and `-` in labels of 1 to 63, 253 in
    /// all; `_` is let through, as resolvers do). `*` (any interface, for binding) and interface
    /// names are names too.
    package static func hostProblem(in endpoint: String) -> String? {
        guard endpoint.hasPrefix("tcp://") else { return nil }
        let destination = endpoint.dropFirst("tcp://".count).split(separator: ";", omittingEmptySubsequences: false).last ?? ""
        guard let colon = destination.lastIndex(of: ":") else { return nil }
        let host = String(destination[..<colon])
        if host.isEmpty || host == "*" { return nil }
        if host.hasPrefix("[") || host.hasSuffix("]") {
            guard host.hasPrefix("["), host.hasSuffix("]"), host.count > 2 else {
                return "'\(host)' is not a bracketed IPv6 address ([::1])"
            }
            // A zone (`%eth0`) after the address is the interface's.
            let address = host.dropFirst().dropLast().split(separator: "%", maxSplits: 1).first.map(String.init) ?? ""
            var bytes = in6_addr()
            guard inet_pton(AF_INET6, address, &bytes) == 1 else { return "'\(host)' is not an IPv6 address" }
            return nil
        }
        if host.contains(":") {
            return "'\(host)' looks like an IPv6 address: write it in brackets (tcp://[::1]:5550)"
        }
        if host.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }) {
            // inet_aton, as resolvers read numeric hosts (127.1 is 127.0.0.1).
            var address = in_addr()
            guard inet_aton(host, &address) != 0 else {
                return "'\(host)' is not an IPv4 address (four numbers from 0 to 255)"
            }
            return nil
        }
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        guard name.utf8.count <= 253 else { return "the host name '\(host)' is longer than 253 bytes" }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.utf8.count <= 63 else {
                return "'\(host)' is not a host name (each dot-separated part has 1 to 63 characters)"
            }
            guard label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
                label.first != "-", label.last != "-"
            else {
                return "'\(host)' is not a host name (letters, digits and '-' only, not at the ends of a part)"
            }
        }
        return nil
    }

    /// Throws `EINVAL` for `operation`, naming the endpoint, when its port is out of range or its
    /// host can be no address (`hostProblem`).
    static func check(_ endpoint: String, operation: String) throws(ZMQError) {
        try checkPort(of: endpoint, operation: operation)
        if hostProblem(in: endpoint) != nil {
            throw ZMQError(code: czmq_einval(), operation: operation, endpoint: endpoint)
        }
    }
}
