import ZeroMQ

/// The byte side of a subscriber's budget (`BrokerConfiguration.subscriberBudget`): which
/// subscriber connections have taken nothing for the broker's patience while it forwarded more
/// than the budget.
///
/// libzmq counts a subscriber's queue in messages (`SubscriberQueueBudget`), and a message can be
/// a 300-byte notification or a 32 KiB batch, so a mark alone bounds bytes only for one frame size.
/// The mark is therefore sized for small frames (a burst of small notifications within the budget
/// never reaches it), and this watch bounds the bytes of a subscriber that stops: from the last
/// moment its connection made progress (its peer acknowledged bytes, or over ipc its process ran),
/// every byte the broker forwards may be queued for it, so once that count passes the budget and
/// the patience has run out, it is past its budget and the broker disconnects it (it reconnects by
/// itself and counts what it missed as a gap). Nobody waited for it meanwhile.
///
/// The count is an upper bound of its queue: exact for a subscriber of everything, more than its
/// queue for one of a part (bytes for others count too), so such a one is disconnected sooner,
/// never later; and it starts at the first sample that finds it stopped, so what the kernels'
/// buffers took before that (a few MiB) comes on top. A subscriber that keeps taking something
/// however slowly is never named here: its queue fills to the mark and the publishers wait for
/// it (flow control), as before.
///
/// Socket-free: the forwarding loop samples the connections, gives the bytes forwarded so far
/// and the time, and disconnects what this names.
struct SubscriberStallWatch {
    /// One connection as last seen: its progress counter, and when and at which forwarded byte
    /// count that counter was last seen to move (or its queue empty).
    private struct Entry {
        var progress: UInt64?
        var since: UInt64
        var forwardedSince: UInt64
    }

    let budget: UInt64
    let patienceNanoseconds: UInt64
    private var entries: [ConnectionDescriptor: Entry] = [:]

    init(budget: Int, patienceNanoseconds: UInt64) {
        self.budget = UInt64(max(0, budget))
        self.patienceNanoseconds = patienceNanoseconds
    }

    /// The connections' samples at `now`, after the broker forwarded `forwarded` bytes in all:
    /// returns those past their budget (stopped for the patience, more than the budget forwarded
    /// since), in descriptor order. Connections missing from `samples` are forgotten.
    mutating func observe(_ samples: [ConnectionDescriptor: ConnectionSample], forwarded: UInt64, now: UInt64)
        -> [ConnectionDescriptor]
    {
        var seen: [ConnectionDescriptor: Entry] = [:]
        seen.reserveCapacity(samples.count)
        var past: [ConnectionDescriptor] = []
        for (descriptor, sample) in samples {
            let fresh = Entry(progress: sample.progress, since: now, forwardedSince: forwarded)
            guard budget > 0, var entry = entries[descriptor] else {
                seen[descriptor] = fresh
                continue
            }
            // Moving (or an unreadable counter, or a descriptor reused by a new connection, whose
            // counter starts elsewhere), or nothing left to send: the count starts again.
            if sample.unsentBytes == 0 || sample.progress == nil || entry.progress != sample.progress {
                entry = fresh
            } else if now &- entry.since >= patienceNanoseconds, forwarded &- entry.forwardedSince > budget {
                past.append(descriptor)
            }
            seen[descriptor] = entry
        }
        entries = seen
        return past.sorted { $0.rawValue < $1.rawValue }
    }

    /// A connection the broker disconnected: forgotten (a new connection may take its number).
    mutating func forget(_ descriptor: ConnectionDescriptor) {
        entries[descriptor] = nil
    }
}
