#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ToolSupport
import Synchronization

/// Lines of standard input for `publish --lines`, read as bytes one at a time on a thread of their
/// own, so that a graceful shutdown can stop waiting for the next line (`tail -F` may never send
/// one) without a blocked `read` holding one of the few cooperative threads.
///
/// Lines are split by ToolSupport's `LineSplitter` (CRLF input, bytes kept as they are, a last line
/// without `\n`); memory is bounded: a line longer than `maximumLineBytes` is reported as
/// `.tooLong` with its length.
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
            var lines = FileDescriptorLines(fileDescriptor: fileDescriptor, maximumLineBytes: maximumLineBytes)
            while true {
                demand.wait()
                let line = lines.next()
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
