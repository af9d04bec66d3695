import Foundation
@testable import NotificationBus

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
