import Logging

/// How one side of a bus attaches to an endpoint: listen (`bind`) or dial (`connect`).
public enum Attachment: Hashable, Sendable, CustomStringConvertible {
    /// Listen on the endpoint (`tcp://127.0.0.1:5550`, `ipc:///tmp/x.sock`, `inproc://name`).
    case bind(String)
    /// Dial the endpoint; ZeroMQ connects and reconnects in the background.
    case connect(String)

    /// The endpoint text.
    public var endpoint: String {
        switch self {
        case .bind(let endpoint), .connect(let endpoint): return endpoint
        }
    }

    /// Whether this attachment listens.
    public var isBind: Bool {
        if case .bind = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .bind(let endpoint): return "bind \(endpoint)"
        case .connect(let endpoint): return "connect \(endpoint)"
        }
    }
}
