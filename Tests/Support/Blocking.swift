import Foundation

/// Runs `body`, which blocks (a child process's output read to its end, `waitUntilExit`), on a
/// thread of its own and awaits its result.
///
/// Swift's cooperative pool has one thread per core: two on this machine. A test that blocks one
/// of them for seconds (Chromium rendering a page) leaves every other test's tasks one thread,
/// and two such tests stall them all: a consumer that takes 0.4 s alone then missed a 30 s bound
/// in the full run. Blocking work in an async test goes through here.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}
