import ZeroMQ

/// One publishing path (a broker) of a publisher connected to several (NBP-1 §17).
struct PublisherPath: Equatable {
    /// The next frame of the pending posts (`PendingPosts`) this path has not taken (nor given up on).
    var cursor = 0
    /// Since when (monotonic ns) this path has taken nothing while frames waited for it. A
    /// path that takes some (a broker applying flow control for a slow subscriber) is moving,
    /// not stalled: only one that takes nothing for `pathStallLimit` is given up on.
    var refusedSince: UInt64?
    /// Given up on for now: it refused for `pathStallLimit`, so what it refuses is dropped at
    /// once (counted) instead of waited for; it is back once it takes a whole round.
    var parked = false
}

/// When a publisher with several brokers stops waiting for one (socket-free, clock as input):
/// after each attempt to send a path its frames, what to do with what it did not take.
struct PublisherPathsStateMachine {
    enum Decision: Equatable {
        /// It took everything queued.
        case done
        /// It took not everything: wait for it (retry next round).
        case wait
        /// Give up what it did not take (it is parked; `newly` the first time, after `stalledFor` ns).
        case drop(newly: Bool, stalledFor: UInt64)
    }

    private(set) var paths: [PublisherPath]
    private(set) var limit: UInt64

    init(paths: Int, limit: UInt64) {
        self.paths = Array(repeating: PublisherPath(), count: paths)
        self.limit = limit
    }

    /// `path` was offered its frames at `now` and took up to `cursor`; `count` frames are queued;
    /// `up[i]` tells whether path `i` has a connection; `covered(path, carriers)` whether the
    /// paths `carriers` bring every subscriber `path` brings.
    mutating func attempted(
        path: Int, cursor: Int, count: Int, now: UInt64, up: [Bool], covered: (Int, [Int]) -> Bool = { _, _ in true }
    ) -> Decision {
        let moved = cursor > paths[path].cursor
        paths[path].cursor = cursor
        if cursor >= count {
            // It took everything: whatever it refused before is over.
            paths[path].refusedSince = nil
            paths[path].parked = false
            return .done
        }
        let since = moved ? now : paths[path].refusedSince ?? now
        paths[path].refusedSince = since
        // Another path really carries the stream: connected (a path without a connection
        // swallows every send), not given up on, not stalled itself, and bringing every
        // subscriber this one brings.
        let carriers = paths.indices.filter { other in
            other != path && !paths[other].parked && up[other]
                && (paths[other].refusedSince.map { now &- $0 < limit } ?? true)
        }
        let othersCarry = !carriers.isEmpty && covered(path, carriers)
        // Given up on, but no other path carries the stream any more: it is the last one, waited for.
        if paths[path].parked && !othersCarry {
            paths[path].parked = false
            paths[path].refusedSince = now
        }
        guard paths[path].parked || (now &- since >= limit && othersCarry) else { return .wait }
        let newly = !paths[path].parked
        paths[path].parked = true
        paths[path].cursor = count
        return .drop(newly: newly, stalledFor: now &- since)
    }

    /// Closing: a path that refuses is waited for at most `limit` ns (if less than the stall
    /// limit) before the others carry the rest alone. Waiting the whole stall limit (15 s) past a
    /// close timeout (2 s) held every path's tail back for one broker host gone silent, and the
    /// close then left it unsent on all of them.
    mutating func shortenLimit(to limit: UInt64) {
        self.limit = min(self.limit, limit)
    }

    /// The paths given up on: what their sockets still hold is for a broker the others replace.
    var parked: [Int] { paths.indices.filter { paths[$0].parked } }

    /// A new batch of frames: every path starts at its first.
    mutating func restart() {
        for path in paths.indices { paths[path].cursor = 0 }
    }

    /// The frames every path is through with.
    var done: Int { paths.map(\.cursor).min() ?? 0 }
}

/// Publishing through several brokers: every frame goes to every broker, as a copy (a shared
/// reference, not a copy of the bytes), each broker at its own pace. The loop takes more posts
/// only once every path took (or gave up) all it took before, so one slow broker holds the
/// stream back for at most `pathStallLimit`; then it is parked, and the others go on alone.
extension BusEventLoop {
    /// Hands the posts to every path (`PendingPosts.sendToPaths`); returns whether any path took
    /// a frame.
    func sendToPaths() -> Bool {
        assertOnLoopThread()
        // Nothing to send: no clock read.
        guard posts.hasUnsent else { return false }
        return posts.sendToPaths(
            sockets.publishers, now: Timestamps.monotonicNanoseconds(), up: sockets.publisherPathUp,
            covered: { publisherSide.subscribersCovered(path: $0, by: $1) }, stopped: { contextTerminated },
            failed: { record($0, "sending a notification") },
            parked: { path, stalledFor in log.pathParked(endpoint: sockets.resolvedEndpoints[path], stalledFor: stalledFor) })
    }
}
