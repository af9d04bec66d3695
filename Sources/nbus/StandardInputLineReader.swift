import Foundation
import Synchronization

/// Lines of standard input for `publish --lines`, read one at a time on a thread of their own, so
/// that a graceful shutdown can stop waiting for the next line (`tail -F` may never send one)
/// without a blocked `readLine` holding one of the few cooperative threads.
///
/// `next()` asks the reader thread for one line and suspends until it arrives; it returns nil at
/// the end of input or when the calling task is cancelled. A line read after its caller was
/// cancelled is dropped: the command is stopping and had not taken it.
final class StandardInputLineReader: Sendable {
    private struct State {
        var waiter: CheckedContinuation<String?, Never>?
        var finished = false
    }

    private let state = Mutex(State())
    private let demand = DispatchSemaphore(value: 0)

    init() {
        Thread.detachNewThread { [self] in
            while true {
                demand.wait()
                let line = readLine(strippingNewline: true)
                let waiter = state.withLock { state in
                    if line == nil { state.finished = true }
                    return state.waiter.take()
                }
                waiter?.resume(returning: line)
                if line == nil { return }
            }
        }
    }

    /// The next line, or nil at the end of input or on cancellation.
    func next() async -> String? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
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
