import ZeroMQ

/// One publishing path (a broker) of a publisher connected to several (NBP-1 §17).
struct PublisherPath {
    /// The next frame of `pending` this path has not taken (nor given up on).
    var cursor = 0
    /// Since when (monotonic ns) this path has refused the frame at `cursor`, if it does.
    var refusedSince: UInt64?
    /// Given up on for now: it refused for `pathStallLimit`, so what it refuses is dropped at
    /// once (counted) instead of waited for; it is back once it takes a whole round.
    var parked = false
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
        let limit = Timestamps.boundedNanoseconds(configuration.pathStallLimit)
        for path in publisherPaths.indices where publisherPaths[path].cursor < count {
            let socket = sockets.publishers[path]
            var cursor = publisherPaths[path].cursor
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
            if cursor > publisherPaths[path].cursor { progressed = true }
            publisherPaths[path].cursor = cursor
            if cursor == count {
                // It took everything: whatever it refused before is over.
                publisherPaths[path].refusedSince = nil
                publisherPaths[path].parked = false
                continue
            }
            let since = publisherPaths[path].refusedSince ?? now
            publisherPaths[path].refusedSince = since
            let othersTakeSends = publisherPaths.indices.contains { $0 != path && !publisherPaths[$0].parked }
            if publisherPaths[path].parked || (now &- since >= limit && othersTakeSends) {
                // Given up on: what it refuses now is dropped for it alone (the others carry it).
                if !publisherPaths[path].parked {
                    publisherPaths[path].parked = true
                    stats.pathsParked += 1
                    log.pathParked(endpoint: sockets.resolvedEndpoints[path], stalledFor: now &- since)
                }
                stats.pathDrops += UInt64(notifications(inPending: cursor..<count))
                publisherPaths[path].cursor = count
                progressed = true
            }
        }
        let done = publisherPaths.map(\.cursor).min() ?? count
        if done == count && count > pending.sentCount {
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
        guard !publisherPaths.isEmpty else { return }
        for path in publisherPaths.indices { publisherPaths[path].cursor = 0 }
        pendingTaken.removeAll(keepingCapacity: true)
    }
}
