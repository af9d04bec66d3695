import CZeroMQ

/// Checks for `tcp://` endpoints. libzmq 4.3 parses the port with `strtoul` and keeps its low 16
/// bits: `tcp://127.0.0.1:99999` binds port 34463 without a word. `Socket.bind`/`connect` refuse.
public enum TCPEndpoint {
    /// The port of a `tcp://` endpoint that is a number above 65535 (of any `;`-separated address:
    /// a connect may name its source), or nil. `*` and other forms are libzmq's to judge.
    public static func outOfRangePort(in endpoint: String) -> String? {
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
