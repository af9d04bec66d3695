/// The broker's retained values (NBP-1 §18): the last retained notification per name, bounded
/// in names and bytes, the one updated longest ago evicted first. Owned by the forwarding thread;
/// no sockets, no clock.
///
/// Eviction order is kept as a queue of (name, generation) with stale entries skipped when they
/// reach the front: an update costs O(1), and the queue is compacted when it holds more than
/// twice the live entries.
struct RetainedStore {
    struct Entry {
        /// The notification as received, re-encoded as one version 1 frame (a batch's record
        /// becomes a frame of its own).
        var frame: [UInt8]
        var generation: UInt64
        /// When it expires (monotonic ns, the `retain-for` header); nil: never.
        var expires: UInt64?
    }

    /// What `remember` did with one notification.
    enum Outcome: Equatable {
        case kept
        case cleared
        /// Kept, and this many older values were evicted to make room (the last one named).
        case keptEvicting(count: Int, lastName: String)
        /// Larger than the whole byte bound: not kept (an older value of the name is dropped).
        case tooLarge
    }

    let maximumNames: Int
    let maximumBytes: Int
    private(set) var entries: [NotificationName: Entry] = [:]
    private(set) var bytes = 0
    private var order: [(name: NotificationName, generation: UInt64)] = []
    private var orderStart = 0
    private var generation: UInt64 = 0

    init(maximumNames: Int, maximumBytes: Int) {
        self.maximumNames = maximumNames
        self.maximumBytes = maximumBytes
    }

    var isEnabled: Bool { maximumNames > 0 }
    var count: Int { entries.count }

    /// Keeps `notification` (its retain bit set) as its name's value, or clears the name when its
    /// payload is empty.
    mutating func remember(_ notification: BusNotification, now: UInt64 = 0) -> Outcome {
        let name = notification.name
        if notification.payload.isEmpty {
            return remove(name) ? .cleared : .kept
        }
        var kept = notification
        kept.flags |= WireFormat.Flag.retain
        // Encoding a notification that decoded cannot fail (the same limits); if it ever did, the
        // value is not kept, and the old one is dropped rather than served stale.
        guard let frame = try? EnvelopeCodec.encode(kept), frame.count <= maximumBytes else {
            _ = remove(name)
            return .tooLarge
        }
        if let old = entries[name] { bytes -= old.frame.count }
        generation &+= 1
        let expires = notification.retainedLifetimeNanoseconds.map { now &+ $0 }
        entries[name] = Entry(frame: frame, generation: generation, expires: expires)
        bytes += frame.count
        order.append((name, generation))
        var evicted = 0
        var lastEvicted = ""
        while entries.count > maximumNames || bytes > maximumBytes, let oldest = popOldest(keeping: name) {
            evicted += 1
            lastEvicted = oldest.rawValue
        }
        compactIfSparse()
        return evicted == 0 ? .kept : .keptEvicting(count: evicted, lastName: lastEvicted)
    }

    /// The frames of every kept value whose name `pattern` matches, the retained-copy bit set,
    /// in name order (deterministic for tests and for a foreign reader); values whose
    /// `retain-for` passed are dropped (returned in `expired`), never sent.
    mutating func frames(matching pattern: NamePattern, now: UInt64) -> (frames: [[UInt8]], expired: Int) {
        var result: [(NotificationName, [UInt8])] = []
        var expired: [NotificationName] = []
        for (name, entry) in entries where pattern.matches(name) {
            if let expires = entry.expires, expires <= now {
                expired.append(name)
                continue
            }
            var frame = entry.frame
            frame[name.rawValue.utf8.count + 1 + WireFormat.FixedHeaderOffset.flags] |= WireFormat.Flag.retainedCopy
            result.append((name, frame))
        }
        for name in expired { _ = remove(name) }
        return (result.sorted { $0.0.rawValue < $1.0.rawValue }.map(\.1), expired.count)
    }

    private mutating func remove(_ name: NotificationName) -> Bool {
        guard let old = entries.removeValue(forKey: name) else { return false }
        bytes -= old.frame.count
        return true
    }

    /// Evicts the value updated longest ago, never `keeping` (the one just stored).
    private mutating func popOldest(keeping: NotificationName) -> NotificationName? {
        while orderStart < order.count {
            let candidate = order[orderStart]
            guard let entry = entries[candidate.name], entry.generation == candidate.generation else {
                orderStart += 1
                continue
            }
            // Only the value just stored is left: it stays, with its place in the order.
            if candidate.name == keeping { return nil }
            orderStart += 1
            _ = remove(candidate.name)
            return candidate.name
        }
        return nil
    }

    private mutating func compactIfSparse() {
        guard order.count - orderStart > 2 * entries.count + 64 else { return }
        order = order[orderStart...].filter { entries[$0.name]?.generation == $0.generation }
        orderStart = 0
    }
}
