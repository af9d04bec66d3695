import Foundation
import Testing
import ZeroMQ

/// Endpoints tests may use: inproc names, ipc paths in a fresh temp folder, tcp on 127.0.0.1 only.
enum TestEndpoint {
    static func inproc(_ label: String = #function) -> String {
        "inproc://\(label.filter(\.isLetter))-\(UUID().uuidString)"
    }

    /// A fresh `ipc://` path in its own temp folder (kept short: Unix socket paths max out near 107 bytes).
    static func ipc() throws -> String {
        let folder = "/tmp/nbus-test-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return "ipc://\(folder)/s.sock"
    }

    static let tcpAnyPort = "tcp://127.0.0.1:*"
}

extension Socket {
    /// Binds an XPUB and returns the resolved endpoint (the real port for `tcp://127.0.0.1:*`).
    func bindResolved(_ endpoint: String) throws -> String {
        try bind(endpoint)
        return try lastEndpoint()
    }

    /// Waits, bounded by the socket's receive timeout, for an XPUB subscription message for `prefix`.
    func awaitSubscription(_ prefix: [UInt8]) throws {
        while true {
            let frame: [UInt8] = try receive()
            if frame == [1] + prefix { return }
        }
    }
}
