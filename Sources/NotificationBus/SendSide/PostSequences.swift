#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// A publisher's last sequence number per name. The name posted last is kept aside, so a run of
/// posts to one name (the common case) costs a byte comparison instead of a hash lookup.
struct PostSequences {
    private var table: [NotificationName: UInt64] = [:]
    private var current: (name: NotificationName, last: UInt64)?

    /// The next sequence number for `name` (1 for its first post), recorded as its last.
    mutating func next(for name: NotificationName) -> UInt64 {
        if var entry = current, entry.name == name {
            entry.last += 1
            current = entry
            return entry.last
        }
        if let entry = current { table[entry.name] = entry.last }
        let last = (table.removeValue(forKey: name) ?? 0) + 1
        current = (name, last)
        return last
    }

    /// Every name's last sequence number.
    var all: [NotificationName: UInt64] {
        var all = table
        if let entry = current { all[entry.name] = entry.last }
        return all
    }
}
