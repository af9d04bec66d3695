#if canImport(Glibc)
import Glibc
#endif

/// Starts a joinable POSIX thread running `body` (the bus's I/O thread, the broker's threads).
/// Plain pthreads rather than Foundation's `Thread` so `close()` can join them: no thread outlives its owner.
func spawnThread(_ body: @escaping @Sendable () -> Void) throws(BusError) -> pthread_t {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var handle = pthread_t()
    let result = pthread_create(
        &handle, nil,
        { argument in
            guard let argument else { return nil }
            Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }, Unmanaged.passRetained(Box(body)).toOpaque())
    guard result == 0 else { throw .system("pthread_create failed with error \(result)") }
    return handle
}
