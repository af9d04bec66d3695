#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import ZeroMQ

/// A fresh folder `/tmp/PREFIX-XXXXXXXX` (short: Unix socket paths stop near 107 bytes) for ipc
/// socket files and other files of one test, removed by `remove()`, and in any case when the test
/// process exits (`temporaryIPCEndpoint()` never calls `remove()`: before, each run of the suite
/// left hundreds of folders in /tmp).
public struct TempFolder: Sendable {
    public let path: String

    public init(prefix: String = "nbus-test") throws {
        var template = Array("/tmp/\(prefix)-XXXXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard created != nil else { throw TestSetupError("mkdtemp failed: errno \(errno)") }
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        TempFolderJanitor.register(path)
    }

    /// `ipc://<folder>/<file>`.
    public func ipc(_ file: String = "s.sock") -> String { "ipc://\(path)/\(file)" }

    /// `<folder>/<name>`.
    public func file(_ name: String) -> String { "\(path)/\(name)" }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The folders `TempFolder` made in this process, removed at its exit (`atexit`: a normal exit,
/// not a kill). A folder a test removed itself is skipped.
private enum TempFolderJanitor {
    static let folders = Mutex<[String]>([])
    static let installed: Void = {
        atexit {
            for folder in TempFolderJanitor.folders.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: folder)
            }
        }
    }()

    static func register(_ folder: String) {
        _ = installed
        folders.withLock { $0.append(folder) }
    }
}

/// A fresh `ipc://` endpoint in its own temp folder.
public func temporaryIPCEndpoint(_ file: String = "s.sock") throws -> String {
    try TempFolder().ipc(file)
}

/// Endpoints tests may use besides ipc: inproc names and tcp on 127.0.0.1 only.
public enum TestEndpoint {
    /// A unique `inproc://` name (inproc joins sockets of one context only).
    public static func inproc(_ label: String = #function) -> String {
        "inproc://\(label.filter(\.isLetter))-\(UUID().uuidString)"
    }

    /// Loopback with a port the kernel picks (read it back with `lastEndpoint()`).
    public static let tcpAnyPort = "tcp://127.0.0.1:*"
}

/// A test could not set up what it needs (not a failure of the code under test).
public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Socket {
    /// Waits, bounded by the socket's receive timeout, for an XPUB subscription message for `prefix`.
    public func awaitSubscription(_ prefix: [UInt8]) throws {
        while try receive() != [1] + prefix {}
    }
}
