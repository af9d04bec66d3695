import NIOCore
import Synchronization

// Internal, not private: MonitoringHTTPService and MonitoringChildChannel, in other files, use it.
/// The open connections, counted against the cap, and closed all at once on shutdown.
final class ConnectionRegistry: Sendable {
    private let limit: Int
    private let open = Mutex<[ObjectIdentifier: any Channel]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Records `channel` unless `limit` connections are open already; whether it was.
    func admit(_ channel: any Channel) -> Bool {
        open.withLock { open in
            guard open.count < limit else { return false }
            open[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func remove(_ channel: any Channel) {
        // A channel is alive until it has closed, so its identifier is not reused before this.
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func closeAll() {
        for channel in open.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }
}
