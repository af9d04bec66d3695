#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// SIGINT/SIGTERM as an async wait: the first signal is returned for an orderly shutdown; a
/// second one exits at once (status 130), for when the orderly path hangs.
enum TerminationSignals {
    /// Suspends until SIGINT or SIGTERM arrives; returns the signal number.
    static func wait() async -> Int32 {
        let stream = AsyncStream<Int32> { continuation in
            let box = SourceBox()
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    if box.markReceived() { exit(128 + signalNumber) }
                    continuation.yield(signalNumber)
                }
                source.resume()
                box.keep(source)
            }
            continuation.onTermination = { _ in box.cancelAll() }
        }
        for await signalNumber in stream { return signalNumber }
        return 0
    }
}

/// Keeps the dispatch sources alive and remembers whether a signal already arrived.
private final class SourceBox: Sendable {
    private let state = Mutex<(sources: [DispatchSourceSignal], received: Bool)>(([], false))

    func keep(_ source: DispatchSourceSignal) { state.withLock { $0.sources.append(source) } }

    /// Records a signal; returns true when one had arrived before (the second signal).
    func markReceived() -> Bool {
        state.withLock { state in
            defer { state.received = true }
            return state.received
        }
    }

    func cancelAll() { state.withLock { state in for source in state.sources { source.cancel() } } }
}
