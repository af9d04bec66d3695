#if canImport(Glibc)
import Glibc
#endif

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
