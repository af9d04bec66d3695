import Foundation
@testable import NotificationBus
import ZeroMQ

/// A fresh `ipc://` endpoint in its own temp folder (short: Unix socket paths stop near 107 bytes).
func temporaryIPCEndpoint(_ file: String = "s.sock") throws -> String {
    let folder = "/tmp/nbus-test-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return "ipc://\(folder)/\(file)"
}

/// A one-shot signal a test task can await; `fire()` is idempotent.
final class Gate: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Void>.makeStream()
    }

    func fire() {
        continuation.finish()
    }

    func wait() async {
        for await _ in stream {}
    }
}

/// A raw ZeroMQ XPUB bound on a fresh ipc endpoint (10 s receive timeout), to feed a bus
/// hand-made frames as a foreign producer would. The socket keeps its context alive.
func rawPublisher() throws -> (socket: Socket, endpoint: String) {
    let socket = try Context().socket(.xpub)
    try socket.set(.receiveTimeout, 10_000)
    let endpoint = try temporaryIPCEndpoint()
    try socket.bind(endpoint)
    return (socket, endpoint)
}

extension Socket {
    /// Waits (bounded by the receive timeout) until a subscription to `prefix` reaches this XPUB.
    func awaitSubscription(_ prefix: [UInt8]) throws {
        while try receive() != [1] + prefix {}
    }
}
