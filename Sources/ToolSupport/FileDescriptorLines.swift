#if canImport(Glibc)
import Glibc
#endif

/// Lines read from a file descriptor with blocking `read(2)` (EINTR retried), through
/// `LineSplitter`: for a thread of its own, never a cooperative one.
package struct FileDescriptorLines {
    private var input: FileDescriptorBytes
    private var splitter: LineSplitter
    private var atEnd = false

    /// Lines of `fileDescriptor`, each up to `maximumLineBytes`.
    package init(fileDescriptor: Int32, maximumLineBytes: Int = Int.max - 1) {
        input = FileDescriptorBytes(fileDescriptor: fileDescriptor)
        splitter = LineSplitter(maximumLineBytes: maximumLineBytes)
    }

    /// The next line (blocking), or nil once the input has ended and every line was returned.
    package mutating func next() -> InputLine? {
        while true {
            if let line = splitter.next() { return line }
            if atEnd { return splitter.finish() }
            switch input.next() {
            case .failure(let failure):
                atEnd = true
                guard case .readFailed(let reason) = failure else { continue }
                return .readFailed(reason: reason)
            case .success(let chunk) where chunk.isEmpty:
                atEnd = true
            case .success(let chunk):
                chunk.withUnsafeBytes { splitter.append($0) }
            }
        }
    }
}
