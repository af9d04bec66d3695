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
        nextNotingRepeat(for: name).sequence
    }

    /// `next(for:)`, and whether `name` is the name of the call before (the comparison this makes
    /// anyway): the outbound queue continues its open batch frame on it without comparing again.
    mutating func nextNotingRepeat(for name: NotificationName) -> (sequence: UInt64, sameName: Bool) {
        if var entry = current, entry.name == name {
            entry.last += 1
            current = entry
            return (entry.last, true)
        }
        if let entry = current { table[entry.name] = entry.last }
        let last = (table.removeValue(forKey: name) ?? 0) + 1
        current = (name, last)
        return (last, false)
    }

    /// Every name's last sequence number.
    var all: [NotificationName: UInt64] {
        var all = table
        if let entry = current { all[entry.name] = entry.last }
        return all
    }
}
