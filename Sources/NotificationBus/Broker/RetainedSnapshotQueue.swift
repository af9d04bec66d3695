/// Snapshots waiting to be sent to new subscriptions (NBP-1 §18), as encoded frames, in the order
/// they were asked for. A snapshot's content is taken when its request is read, so it holds what
/// the broker had forwarded before: a live notification forwarded later is newer, and the
/// subscriber, which tracks sequences, keeps the newer one. No sockets: the forwarder sends
/// `next` and calls `sent()` when the backend took it.
struct RetainedSnapshotQueue {
    /// The broker's own publisher id for snapshot frames (random, nonzero, new at each start).
    let publisherID: UInt64
    private var frames: [[UInt8]] = []
    private var start = 0
    /// Snapshots not yet sent whole; a request past this many is answered with nothing at all (the
    /// subscriber's wait times out and says so) rather than letting subscribers queue memory.
    static let maximumPending = 4_096
    /// The most bytes of snapshot frames queued at once (each request copies the values it
    /// matches): past it a request is answered with nothing, as past `maximumPending`.
    static let maximumPendingBytes = 256 << 20
    private(set) var pendingSnapshots = 0
    private(set) var pendingBytes = 0
    private var finals: Set<Int> = []

    init(publisherID: UInt64 = UInt64.random(in: 1...UInt64.max)) {
        self.publisherID = publisherID
    }

    var next: [UInt8]? { start < frames.count ? frames[start] : nil }
    var isEmpty: Bool { start >= frames.count }

    /// Queues the snapshot for `reply` carrying `entries` (each a version 1 frame with the
    /// retained-copy bit); false when too many are pending. `takesAll`: this broker takes every
    /// publisher's notifications (it keeps retained values), so a subscription it answered is
    /// live at every publisher connected to it.
    mutating func enqueue(reply: NotificationName, entries: [[UInt8]], takesAll: Bool, now: UInt64) -> Bool {
        guard pendingSnapshots < Self.maximumPending, pendingBytes < Self.maximumPendingBytes else { return false }
        let payloads = RetainedSnapshot.payloads(entries: entries)
        for (index, payload) in payloads.enumerated() {
            var headers = NotificationHeaders()
            if index == payloads.count - 1 {
                headers = [
                    RetainedSnapshot.finalHeader: "1", RetainedSnapshot.countHeader: String(entries.count),
                    RetainedSnapshot.takesAllHeader: takesAll ? "1" : "0",
                ]
            }
            let frame = BusNotification(
                name: reply, payload: payload, headers: headers, sequence: UInt64(index + 1), publisherID: publisherID,
                timestamp: now)
            // Headers of fixed, short keys and values and a payload this side built: cannot fail;
            // were it ever to, the snapshot is not sent and the subscriber's wait says so.
            guard let encoded = try? EnvelopeCodec.encode(frame) else { return false }
            if index == payloads.count - 1 { finals.insert(frames.count) }
            pendingBytes += encoded.count
            frames.append(encoded)
        }
        pendingSnapshots += 1
        return true
    }

    /// The backend took `next`; returns whether that ended a snapshot.
    mutating func sent() -> Bool {
        let ended = finals.remove(start) != nil
        if ended { pendingSnapshots -= 1 }
        pendingBytes -= frames[start].count
        frames[start] = []
        start += 1
        if start == frames.count {
            frames.removeAll(keepingCapacity: false)
            start = 0
            finals.removeAll()
        }
        return ended
    }

    /// Drops what is left of the snapshot at the head (its subscriber took nothing for too
    /// long: the snapshots behind it must not wait for it); returns the frames dropped. That
    /// subscriber's wait for its values times out and says so.
    mutating func dropHead() -> Int {
        var dropped = 0
        while start < frames.count {
            dropped += 1
            if sent() { break }
        }
        return dropped
    }
}
