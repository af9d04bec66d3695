#if canImport(Glibc)
import Glibc
#endif

/// One line as `LineSplitter` and `FileDescriptorLines` hand it out.
package enum InputLine: Sendable, Equatable {
    /// The line's bytes, exactly as read, without its line ending (`\n`, or `\r\n`).
    case bytes([UInt8])
    /// A line longer than the maximum: `byteCount` bytes (without the line ending) were read and
    /// dropped, and splitting goes on with the next line.
    case tooLong(byteCount: Int)
    /// Reading failed (`reason` is the system's text); no line follows.
    case readFailed(reason: String)

    /// The line as text (invalid UTF-8 repaired); nil for `.tooLong` and `.readFailed`.
    package var text: String? {
        guard case .bytes(let bytes) = self else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The one line splitter of the project: bytes in (from `read(2)`, a pipe, a child's stdout), lines
/// out. Used by `nbus publish --lines`, the benchmark workers' stdin and `ChildProcess`'s stdout.
///
/// A line ends at `\n`; one `\r` right before it is removed too (CRLF input). Every other byte is
/// kept as it is, UTF-8 or not. At the end of input a last line without `\n` is a line too
/// (`finish()`). Memory is bounded by `maximumLineBytes`: a longer line is not kept but returned as
/// `.tooLong` with its length. Not thread-safe: one owner at a time.
package struct LineSplitter {
    private let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    /// Where the unread part of `buffer` starts.
    private var start = 0
    /// Where to look for the next `\n` (everything from `start` to here has none).
    private var scanned = 0
    /// Bytes of the current line already dropped because it grew past the maximum.
    private var dropped = 0

    /// A splitter that keeps lines up to `maximumLineBytes` (without their ending).
    package init(maximumLineBytes: Int = Int.max - 1) {
        self.maximumLineBytes = max(0, min(maximumLineBytes, Int.max - 1))
    }

    /// Adds bytes read from the input.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Adds bytes read from the input.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        Array(bytes).withUnsafeBytes { append($0) }
    }

    /// The next complete line, or nil when the bytes so far hold none (`.bytes` or `.tooLong`).
    package mutating func next() -> InputLine? {
        if let newline = newlineIndex() {
            var end = newline
            if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let line = take(from: start, to: end)
            start = newline + 1
            scanned = start
            return line
        }
        scanned = buffer.count
        // Keep one byte more than the maximum: it may be the `\r` of a `\r\n`.
        if buffer.count - start > maximumLineBytes + 1 {
            // A last `\r` stays: it may be the first half of a `\r\n`, which the count leaves out.
            let keepsCarriageReturn = buffer[buffer.count - 1] == UInt8(ascii: "\r")
            dropped += buffer.count - start - (keepsCarriageReturn ? 1 : 0)
            buffer.removeAll(keepingCapacity: true)
            if keepsCarriageReturn { buffer.append(UInt8(ascii: "\r")) }
            (start, scanned) = (0, 0)
        }
        return nil
    }

    /// At the end of input: the last line if it had no `\n`, else nil. Call after `next()` returned nil.
    package mutating func finish() -> InputLine? {
        guard start < buffer.count || dropped > 0 else { return nil }
        let line = take(from: start, to: buffer.count)
        buffer.removeAll()
        (start, scanned) = (0, 0)
        return line
    }

    /// Every complete line in `bytes` and what came before them, as text (for JSON-line protocols).
    package mutating func textLines(appending bytes: UnsafeRawBufferPointer) -> [String] {
        append(bytes)
        var lines: [String] = []
        while let line = next() {
            if let text = line.text { lines.append(text) }
        }
        return lines
    }

    private mutating func take(from lower: Int, to upper: Int) -> InputLine {
        let count = dropped + upper - lower
        defer { dropped = 0 }
        return dropped == 0 && count <= maximumLineBytes
            ? .bytes(Array(buffer[lower..<upper])) : .tooLong(byteCount: count)
    }

    /// The index of the first `\n` from `scanned` on (`memchr`: this runs over every byte read).
    private func newlineIndex() -> Int? {
        guard scanned < buffer.count else { return nil }
        return buffer.withUnsafeBytes { raw -> Int? in
            guard let base = raw.baseAddress,
                let found = memchr(base + scanned, Int32(UInt8(ascii: "\n")), buffer.count - scanned)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
    }
}

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
