#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// A bus's life, in one place: whether it takes work, and who waits for it to end.
///
/// `open` -> `closing` (`close()` or the last reference dropped) -> `closed` (the event loop has
/// flushed, ended every subscription and wait, and closed every socket). A context terminated
/// under the loop takes it from `open` to `closed` directly. Nothing goes back.
enum BusLifecycle {
    /// Posts, subscriptions, waits and executor jobs are taken.
    case open
    /// Nothing new is taken; the loop is flushing what it has. `close()` callers wait here.
    case closing(closeWaiters: [CheckedContinuation<Void, Never>])
    /// The loop has ended and every socket is closed.
    case closed

    var isOpen: Bool {
        if case .open = self { return true }
        return false
    }
}
