import ZeroMQ

/// One publishing path (a broker) of a publisher connected to several (NBP-1 §17).
struct PublisherPath: Equatable {
    /// The next frame of `pending` this path has not taken (nor given up on).
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
    let limit: UInt64

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

    /// A new batch of frames: every path starts at its first.
    mutating func restart() {
        for path in paths.indices { paths[path].cursor = 0 }
    }

    /// The frames every path is through with.
    var done: Int { paths.map(\.cursor).min() ?? 0 }
}

/// Publishing through several brokers: every frame goes to every broker, as a copy (a shared
/// reference, not a copy of the bytes), each broker at its own pace. The loop takes more posts
/// only once every path took (or gave up) the whole of `pending`, so one slow broker holds the
/// stream back for at most `pathStallLimit`; then it is parked, and the others go on alone.
extension BusEventLoop {
    /// Hands `pending` to every path; returns whether any path took a frame. Counts, once all
    /// paths are through: `sent` what any path took, `unsent` what none did.
    func sendPendingToPaths() -> Bool {
        assertOnLoopThread()
        let count = pending.count
        guard pending.sentCount < count else { return false }
        if pendingTaken.count != count {
            pendingTaken = Array(repeating: false, count: count)
        }
        var progressed = false
        let now = Timestamps.monotonicNanoseconds()
        for path in publisherPaths.paths.indices where publisherPaths.paths[path].cursor < count {
            let socket = sockets.publishers[path]
            let start = publisherPaths.paths[path].cursor
            var cursor = start
            while cursor < count && !contextTerminated {
                do {
                    let sent = try socket.sendCopies(of: pending, from: cursor)
                    for index in cursor..<(cursor + sent) { pendingTaken[index] = true }
                    cursor += sent
                    break
                } catch {
                    // A frame ZeroMQ rejects outright cannot be retried: this path goes without it.
                    record(error, "sending a notification")
                    stats.pathDrops += UInt64(notifications(inPending: cursor..<(cursor + 1)))
                    cursor += 1
                }
            }
            if cursor > start { progressed = true }
            let decision = publisherPaths.attempted(
                path: path, cursor: cursor, count: count, now: now, up: sockets.publisherPathUp,
                covered: { publisherSide.subscribersCovered(path: $0, by: $1) })
            if case .drop(let newly, let stalledFor) = decision {
                // Given up on: what it refuses now is dropped for it alone (the others carry it).
                if newly {
                    stats.pathsParked += 1
                    log.pathParked(endpoint: sockets.resolvedEndpoints[path], stalledFor: stalledFor)
                }
                stats.pathDrops += UInt64(notifications(inPending: cursor..<count))
                progressed = true
            }
        }
        if publisherPaths.done == count && count > pending.sentCount {
            // Every path is through: count what reached at least one broker.
            var sent = 0
            var frames = 0
            var unsent = 0
            for index in pending.sentCount..<count {
                let notifications = notifications(inPending: index..<(index + 1))
                if pendingTaken[index] {
                    sent += notifications
                    frames += 1
                } else {
                    unsent += notifications
                }
            }
            stats.sent += UInt64(sent)
            stats.framesSent += UInt64(frames)
            stats.unsent += UInt64(unsent)
            pending.markSent(upTo: count)
        }
        return progressed
    }

    /// `pending` was emptied or replaced: every path starts at its first frame.
    func resetPathCursors() {
        guard !publisherPaths.paths.isEmpty else { return }
        publisherPaths.restart()
        pendingTaken.removeAll(keepingCapacity: true)
    }
}
