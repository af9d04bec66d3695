#if canImport(Glibc)
import Glibc
#endif

/// Chunks read from a file descriptor with blocking `read(2)`, EINTR retried: for a thread of
/// its own, never a cooperative one.
package struct FileDescriptorBytes {
    private let fileDescriptor: Int32
    /// What one `read` fills.
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    /// Reads from `fileDescriptor`.
    package init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// Why reading stopped short.
    package enum Failure: Error, Equatable {
        /// More than the limit came.
        case tooLong
        /// `read(2)` failed; the system's text.
        case readFailed(String)
    }

    /// The next chunk; empty at the end of input.
    package mutating func next() -> Result<ArraySlice<UInt8>, Failure> {
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return .failure(.readFailed(String(cString: strerror(errno)))) }
            return .success(chunk[0..<count])
        }
    }

    /// Everything to the end of input, at most `limit` bytes.
    package mutating func readToEnd(limit: Int) -> Result<[UInt8], Failure> {
        var bytes: [UInt8] = []
        while true {
            switch next() {
            case .failure(let failure): return .failure(failure)
            case .success(let chunk) where chunk.isEmpty: return .success(bytes)
            case .success(let chunk):
                bytes += chunk
                if bytes.count > limit { return .failure(.tooLong) }
            }
        }
    }
}
