import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

/// Starts a joinable POSIX thread running `body` (the bus's I/O thread, the broker's threads).
/// Plain pthreads rather than Foundation's `Thread` so `close()` can join them: no thread outlives its owner.
/// `name` (at most 15 bytes, Linux's limit) is what `top -H`, `ps -L` and `perf` show for it;
/// without it a thread started from a Dispatch worker would carry that worker's name.
func spawnThread(named name: String, _ body: @escaping @Sendable () -> Void) throws(BusError) -> pthread_t {
    final class Box: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    var handle = pthread_t()
    let result = pthread_create(
        &handle, nil,
        { argument in
            guard let argument else { return nil }
            let box = Unmanaged<Box>.fromOpaque(argument).takeRetainedValue()
            // Best effort: a name that cannot be set changes nothing else.
            setCurrentThreadName(box.name)
            box.body()
            return nil
        }, Unmanaged.passRetained(Box(name, body)).toOpaque())
    guard result == 0 else { throw .system("pthread_create failed with error \(result)") }
    return handle
}

/// A value created on one thread and handed, whole, to a thread about to start (the sockets a
/// `Bus`, a `Broker` or a `ZAPHandler` opens on its caller's thread, for its own thread to own).
///
/// `@unchecked Sendable` is safe because of how it is used: the creating thread builds the value,
/// passes it to `spawnThread` and never touches it again, and `pthread_create` is a full memory
/// barrier. libzmq allows exactly this for sockets ("a socket may be migrated from one thread to
/// another with a full memory barrier").
struct ThreadHandoff<Value>: @unchecked Sendable {
    let value: Value
}
