#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where log lines go: a file descriptor written whole lines at a time under a lock.
public final class LogSink: Sendable {
    private let descriptor: Int32
    private let lock = Mutex(())

    /// Lines to `descriptor` (not closed by the sink).
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Standard error.
    public static let standardError = LogSink(descriptor: 2)

    /// Writes `text` whole (retrying short writes and EINTR); a write that fails is dropped:
    /// a log must never stop the program.
    public func write(_ text: String) {
        var bytes = Array(text.utf8)
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { buffer -> Int in
                    guard let base = buffer.baseAddress else { return -1 }
                    return Glibc.write(descriptor, base + offset, buffer.count - offset)
                }
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
