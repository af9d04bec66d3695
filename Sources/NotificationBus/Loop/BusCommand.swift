#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// A request to the event loop. Async code never touches a socket: it enqueues one of these.
enum BusCommand: Sendable {
    case addSubscription(SubscriptionStorage)
    case removeSubscription(UInt64)
    case addWaiter(WaitRequest, CheckedContinuation<Result<Void, BusError>, Never>)
    case cancelWaiter(UInt64)
    case resumeReading

    /// A subscription that starts from the retained values (`retained: true`).
    var addsRetainedSubscription: Bool {
        if case .addSubscription(let storage) = self { return storage.retained != nil }
        return false
    }
}
