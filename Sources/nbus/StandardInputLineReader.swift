#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// One line of standard input as `StandardInputLineReader` hands it out.
enum InputLine: Sendable, Equatable {
    /// The line's bytes, exactly as read, without its line ending (`\n`, or `\r\n`).
    case bytes([UInt8])
    /// A line longer than the reader's maximum: `byteCount` bytes (without the line ending) were
    /// read and dropped, and reading goes on with the next line.
    case tooLong(byteCount: Int)
    /// Reading standard input failed (`reason` is the system's text); no line follows.
    case readFailed(reason: String)
}

/// Lines of standard input for `publish --lines`, read as bytes one at a time on a thread of their
/// own, so that a graceful shutdown can stop waiting for the next line (`tail -F` may never send
/// one) without a blocked `read` holding one of the few cooperative threads.
///
/// A line ends at `\n`; one `\r` right before it is removed too (CRLF input). Every other byte is
/// kept as it is, UTF-8 or not. A last line without a `\n` is a line too. Memory is bounded: a line
/// longer than `maximumLineBytes` is not kept but reported as `.tooLong` with its length.
///
/// `next()` asks the reader thread for one line and suspends until it arrives; it returns nil at
/// the end of input or when the calling task is cancelled. A line read after its caller was
/// cancelled is dropped: the command is stopping and had not taken it.
final class StandardInputLineReader: Sendable {
    private struct State {
        var waiter: CheckedContinuation<InputLine?, Never>?
        var finished = false
    }

    private let state = Mutex(State())
    private let demand = DispatchSemaphore(value: 0)

    /// Starts the reader thread on `fileDescriptor` (standard input unless told otherwise).
    init(maximumLineBytes: Int, fileDescriptor: Int32 = STDIN_FILENO) {
        Thread.detachNewThread { [self] in
            var splitter = LineSplitter(fileDescriptor: fileDescriptor, maximumLineBytes: maximumLineBytes)
            while true {
                demand.wait()
                let line = splitter.next()
                let ends: Bool
                switch line {
                case nil, .readFailed?: ends = true
                case .bytes?, .tooLong?: ends = false
                }
                let waiter = state.withLock { state in
                    if ends { state.finished = true }
                    return state.waiter.take()
                }
                waiter?.resume(returning: line)
                if ends { return }
            }
        }
    }

    /// The next line, or nil at the end of input or on cancellation.
    func next() async -> InputLine? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<InputLine?, Never>) in
                let ready = state.withLock { state -> Bool in
                    guard !state.finished, !Task.isCancelled else { return false }
                    state.waiter = continuation
                    return true
                }
                if ready { demand.signal() } else { continuation.resume(returning: nil) }
            }
        } onCancel: {
            state.withLock { $0.waiter.take() }?.resume(returning: nil)
        }
    }
}

/// Splits what `read(2)` returns from a file descriptor into lines (see `StandardInputLineReader`);
/// used on one thread only.
struct LineSplitter {
    private let fileDescriptor: Int32
    private let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    /// Where the unread part of `buffer` starts.
    private var start = 0
    /// Where to look for the next `\n` (everything from `start` to here has none).
    private var scanned = 0
    private var atEnd = false
    /// What one `read` fills.
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    init(fileDescriptor: Int32, maximumLineBytes: Int) {
        self.fileDescriptor = fileDescriptor
        self.maximumLineBytes = max(0, maximumLineBytes)
    }

    /// The next line, or nil once the input has ended and every line was returned.
    mutating func next() -> InputLine? {
        // Bytes of the current line already dropped because it grew past the maximum.
        var dropped = 0
        while true {
            if let newline = newlineIndex() {
                var end = newline
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = finish(from: start, to: end, dropped: dropped)
                start = newline + 1
                scanned = start
                return line
            }
            scanned = buffer.count
            // Keep one byte more than the maximum: it may be the `\r` of a `\r\n`.
            if buffer.count - start > maximumLineBytes + 1 {
                dropped += buffer.count - start
                buffer.removeAll(keepingCapacity: true)
                (start, scanned) = (0, 0)
            }
            if atEnd {
                guard start < buffer.count || dropped > 0 else { return nil }
                let line = finish(from: start, to: buffer.count, dropped: dropped)
                buffer.removeAll()
                (start, scanned) = (0, 0)
                return line
            }
            if let failure = fill() { return .readFailed(reason: failure) }
        }
    }

    private func finish(from lower: Int, to upper: Int, dropped: Int) -> InputLine {
        let count = dropped + upper - lower
        return dropped == 0 && count <= maximumLineBytes ? .bytes(Array(buffer[lower..<upper])) : .tooLong(byteCount: count)
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

    /// Reads one chunk into the buffer (compacting it first); sets `atEnd` at the end of input.
    /// Returns the system's text when reading failed.
    private mutating func fill() -> String? {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                atEnd = true
                return String(cString: strerror(errno))
            }
            if count == 0 { atEnd = true }
            chunk.withUnsafeBufferPointer { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<count])) }
            return nil
        }
    }
}
