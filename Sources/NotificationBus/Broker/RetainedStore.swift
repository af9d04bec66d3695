/// The broker's retained values (NBP-1 §18): the last retained notification per name, bounded
/// in names and bytes, the one updated longest ago evicted first. Owned by the forwarding thread;
/// no sockets, no clock.
///
/// Eviction order is kept as a queue of (name, generation) with stale entries skipped when they
/// reach the front: an update costs O(1), and the queue is compacted when it holds more than
/// twice the live entries.
struct RetainedStore {
    struct Entry {
        /// The notification as one version 1 frame: a version 1 frame's bytes as received, a
        /// batch's record encoded as a frame of its own. Its retain bit is set; the
        /// retained-copy bit is set on the copy a snapshot takes.
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
    /// payload is empty. For a batch's records: a version 1 frame is kept as it came
    /// (`remember(frame:nameLength:now:)`), with no decode and no encode.
    mutating func remember(_ notification: BusNotification, now: UInt64 = 0) -> Outcome {
        let name = notification.name
        if notification.payload.isEmpty {
            return remove(name) ? .cleared : .kept
        }
        var kept = notification
        kept.flags |= WireFormat.Flag.retain
        // Encoding a notification that decoded cannot fail (the same limits); if it ever did, the
        // value is not kept, and the old one is dropped rather than served stale.
        guard let frame = try? EnvelopeCodec.encode(kept) else {
            _ = remove(name)
            return .tooLarge
        }
        return frame.withUnsafeBytes { store(name, frame: $0, expires: notification.retainedLifetimeNanoseconds.map { now &+ $0 }) }
    }

    /// Keeps a version 1 frame carrying the retain bit, whose name `EnvelopeCodec.nameLength(in:)`
    /// vouched for, as its name's value, its bytes as received (the publisher's retain bit is
    /// already set); an empty payload clears the name. Only the fields it needs are read, in
    /// place; nil when the frame is one receivers would reject (nothing is kept or changed).
    mutating func remember(frame: UnsafeRawBufferPointer, nameLength: Int, now: UInt64) -> Outcome? {
        guard let fields = EnvelopeCodec.retainedFields(frame, validatedNameLength: nameLength) else { return nil }
        let name = NotificationName(validatedBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameLength]))
        if fields.clears {
            return remove(name) ? .cleared : .kept
        }
        return store(name, frame: frame, expires: fields.lifetimeNanoseconds.map { now &+ $0 })
    }

    /// Puts back a value read from `RetainedLog` (a version 1 frame with the retain bit whose
    /// name, `nameLength` bytes, `EnvelopeCodec.nameLength(in:)` vouched for), with its expiry
    /// as it was (monotonic ns; one already past is dropped by the next snapshot or
    /// `dropExpired(now:)`). The bounds apply as for a post: replayed in the order they were
    /// written, the values evict what they evicted then.
    mutating func restore(frame: UnsafeRawBufferPointer, nameLength: Int, expires: UInt64?) -> Outcome {
        let name = NotificationName(validatedBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameLength]))
        return store(name, frame: frame, expires: expires)
    }

    /// Clears `name`'s value (a clear read from `RetainedLog`); whether there was one.
    mutating func clear(_ name: NotificationName) -> Bool {
        remove(name)
    }

    /// Drops every value whose `retain-for` passed by `now` (monotonic ns); how many.
    mutating func dropExpired(now: UInt64) -> Int {
        let expired = entries.compactMap { name, entry in entry.expires.map { $0 <= now } == true ? name : nil }
        for name in expired { _ = remove(name) }
        return expired.count
    }

    /// Every kept value, updated longest ago first (the order that evicts the same values when
    /// replayed into a store with the same bounds).
    var entriesOldestFirst: [(name: NotificationName, entry: Entry)] {
        entries.map { ($0.key, $0.value) }.sorted { $0.entry.generation < $1.entry.generation }
    }

    /// Stores `frame` (copied; into the name's old value's storage when it has the same size, so
    /// a name updated at a steady size allocates nothing) as `name`'s value.
    private mutating func store(_ name: NotificationName, frame: UnsafeRawBufferPointer, expires: UInt64?) -> Outcome {
        guard frame.count <= maximumBytes else {
            _ = remove(name)
            return .tooLarge
        }
        generation &+= 1
        if let index = entries.index(forKey: name) {
            let oldCount = entries.values[index].frame.count
            entries.values[index].generation = generation
            entries.values[index].expires = expires
            if oldCount == frame.count {
                entries.values[index].frame.withUnsafeMutableBytes { $0.copyMemory(from: frame) }
            } else {
                entries.values[index].frame = [UInt8](frame)
                bytes += frame.count - oldCount
            }
        } else {
            entries[name] = Entry(frame: [UInt8](frame), generation: generation, expires: expires)
            bytes += frame.count
        }
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

    /// Drops `name`'s value; false when it had none.
    mutating func removeValue(of name: NotificationName) -> Bool { remove(name) }

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
