/// One (publisher, name) stream heard over several paths at once (a bus connected to two or more
/// brokers, NBP-1 §17): hands on the first copy of each sequence number, in order, and declares a
/// gap only once no path can still bring what is missing. No sockets, no clock of its own: the
/// receiver feeds it what arrives on which path, which paths are connected, and the time.
///
/// Every path is a ZeroMQ connection, so each one brings a stream's sequence numbers in order,
/// with holes where that path lost some (a broker that died, or disconnected a stalled
/// subscriber). So once a path has passed a sequence number, it will never bring it: a missing
/// sequence `m` can still come only from a connected path that carries this stream (it brought
/// some of it already) and has not passed `m`, nor ended the stream. While one can, what arrives
/// beyond the hole is held back (order is kept), for at most `gapTimeout`; then the hole is a
/// gap like any other, and a late copy of it is discarded as a duplicate.
///
/// A path that never brought this stream is not waited for once the stream started: a bus
/// connected to several publishers directly has one path per publisher, and each stream comes
/// over one of them only. The start itself waits (see `started`) at most `startWait` (1 s) for
/// paths that brought nothing yet; so a direct subscriber of several publishers sees the first
/// notification of a stream it joined mid-way up to 1 s late.
struct PathMergeStateMachine<Item> {
    /// What the receiver does with a notification or a change of paths, in this order.
    enum Step {
        /// Hand this notification on.
        case deliver(Item)
        /// These sequence numbers are lost: no path can bring them any more.
        case gap(ClosedRange<UInt64>)
    }

    /// What became of one notification.
    enum Disposition {
        /// Hand it on; nothing else changed (the common case).
        case deliver(Item)
        /// A copy of a sequence already handed on (or held, or declared lost): discard it.
        case duplicate
        /// Held back behind a hole another path may still fill; `settle` releases it.
        case held
        /// It filled a hole or ended a wait: these steps, in order (it is among them).
        case steps([Step])
    }

    /// The last sequence handed on or declared lost; 0 before the first notification.
    private(set) var delivered: UInt64 = 0
    /// Whether the stream's first notification to hand on is settled. Until then what arrives is
    /// held: a path behind may still bring older sequence numbers than the first to arrive (two
    /// brokers forward a new subscriber's first notifications at slightly different moments),
    /// and those must not be taken for duplicates. It starts at sequence 1, once every connected
    /// path brought some of the stream, or after `startWait`, from the oldest held.
    private(set) var started = false
    /// The sequence the stream started at (0 before it started): above 1, this subscriber joined
    /// it late (NBP-1 §8), which `MergedStreams` counts as one path's tracking does.
    private(set) var startSequence: UInt64 = 0
    /// How long the start is waited for (ns).
    let startWait: UInt64
    /// Per path, the highest sequence it brought (0: none yet), or announced as its last by an
    /// end-of-stream record.
    private var seen: [UInt64]
    /// Paths whose end-of-stream record for this stream arrived: they bring nothing more.
    private var endedPaths: UInt64 = 0
    /// Notifications beyond the first hole, ascending, none at or below `delivered + 1`.
    private(set) var held: [(sequence: UInt64, item: Item)] = []
    /// When the current hole (or the tail an end-of-stream record announced) began to be waited for.
    private(set) var waitingSince: UInt64?
    /// The stream's last sequence, from an end-of-stream record.
    private(set) var endSequence: UInt64?
    /// When the first end-of-stream record arrived: a path that brought nothing of the stream
    /// may still bring its copies for a while after it (see `isFinished`).
    private(set) var endedAt: UInt64?

    /// Most notifications held behind holes. Past it the newest held ones are let go, as if they
    /// had not arrived yet: the path that brought them has passed them, so only a path still
    /// behind can bring them again, and if none does they become a hole like any other (counted
    /// when no path can fill it). Memory stays bounded however far one path runs ahead of
    /// another (a restarted broker has empty queues; the other may hold 64 MiB per subscriber),
    /// and nothing is declared lost that a slower path still brings.
    let maximumHeld: Int

    /// A stream over `paths` paths (at most 64).
    init(paths: Int, maximumHeld: Int = 65_536, startWait: UInt64 = 1_000_000_000) {
        precondition(paths >= 1 && paths <= 64, "1 to 64 paths, not \(paths)")
        seen = Array(repeating: 0, count: paths)
        self.maximumHeld = max(1, maximumHeld)
        self.startWait = startWait
    }

    /// Whether anything is held or a tail is awaited: `deadline` is then set.
    var isWaiting: Bool { waitingSince != nil }

    /// When `settle` must run at the latest (the wait for a hole ends), if one is awaited.
    func deadline(gapTimeout: UInt64) -> UInt64? {
        waitingSince.map { $0 &+ (started ? gapTimeout : min(gapTimeout, startWait)) }
    }

    /// Whether `sequence` has been handed on, declared lost, or is held.
    func isDuplicate(_ sequence: UInt64) -> Bool {
        guard started else { return isHeld(sequence) }
        return sequence <= delivered || isHeld(sequence)
    }

    /// A copy holding sequence numbers from `lowest` to `highest` arrived on `path`, not decoded:
    /// whether it brings nothing new (every one of them handed on or declared lost, or, for a
    /// single one, held), so it can be discarded unread. If so, `path` is noted as having passed
    /// `highest`, as feeding the copies to `received` one by one would note it: a path whose
    /// copies are all discarded this way still counts as carrying the stream, and a hole the
    /// other path leaves is waited for while this one can still fill it.
    mutating func discardCopy(lowest: UInt64, highest: UInt64, path: Int) -> Bool {
        let duplicate = lowest == highest ? isDuplicate(highest) : started && highest <= delivered
        if duplicate && highest > seen[path] { seen[path] = highest }
        return duplicate
    }

    /// A run of notifications numbered `first` to `last`, every one in between once and in
    /// order, arrived on `path`: when they are simply the next ones (the stream started, nothing
    /// held nor awaited, `first` follows what was handed on), they are taken as handed on, as
    /// `received` one by one would hand each on, and true is returned; otherwise nothing changes.
    /// A batch frame's first copy, in the common case, without a disposition per notification.
    mutating func receivedInOrder(first: UInt64, last: UInt64, path: Int) -> Bool {
        guard started, waitingSince == nil, first == delivered &+ 1, last >= first else { return false }
        delivered = last
        if last > seen[path] { seen[path] = last }
        return true
    }

    /// The stream ended (its record arrived), everything up to its end is settled, and no path
    /// can still bring a copy: it can be forgotten. Until then its copies are still known as
    /// copies (discarded and counted); forgotten, a late copy would start the stream afresh and
    /// be delivered a second time.
    ///
    /// A path that carried the stream can bring copies until it passed the end or ended the
    /// stream itself. A path that is down counts too: a subscriber a broker disconnected
    /// (stalled) reconnects and may be sent the rest of the stream. (Forgetting such a tombstone
    /// is left to the tracked-streams bound.)
    ///
    /// A path that brought nothing of the stream yet may be a broker a moment behind the other:
    /// a publisher's burst in one batch frame and its end-of-stream record can both arrive over
    /// one path before the other path's first copy (measured: two brokers, `--count 5`
    /// unpaced, 11 runs of 20 delivered every notification twice when such a path was not
    /// waited for). So it is waited for, unless it ends the stream itself, up to `gapTimeout`
    /// after the first end-of-stream record (as long as one broker may lag the other and still
    /// fill a hole), and at least `startWait` (a `gapTimeout` of zero declares holes at once, but
    /// must not deliver twice); past that it is taken for a path that never carries the stream
    /// (a direct subscriber of several publishers). Waiting costs only the tombstone's memory,
    /// never a delivery's delay.
    func isFinished(now: UInt64, gapTimeout: UInt64) -> Bool {
        guard let end = endSequence, delivered >= end, held.isEmpty else { return false }
        let silentMayBring = endedAt.map { now &- $0 < max(gapTimeout, startWait) } ?? true
        return !seen.indices.contains { path in
            if endedPaths & (1 << UInt64(path)) != 0 { return false }
            return seen[path] == 0 ? silentMayBring : seen[path] < end
        }
    }

    /// `item`, sequence `sequence`, arrived on `path` at `now`; `connected` has a bit set per
    /// connected path, as the receiver last read it from the paths' monitors at `pathsReadAt`
    /// (`.max`: `connected` is current).
    mutating func received(
        _ item: Item, sequence: UInt64, path: Int, now: UInt64, connected: UInt64, gapTimeout: UInt64,
        pathsReadAt: UInt64 = .max
    ) -> Disposition {
        if sequence > seen[path] { seen[path] = sequence }
        if isDuplicate(sequence) { return .duplicate }
        if !started {
            // The first notification of a stream is never a loss (NBP-1 §8): held until the
            // start is settled, in order with whatever older one a slower path brings.
            let index = heldIndex(after: sequence)
            held.insert((sequence, item), at: index)
            if held.count > maximumHeld { held.removeLast(held.count - maximumHeld) }
            if waitingSince == nil { waitingSince = now }
            var steps: [Step] = []
            settle(now: now, connected: connected, gapTimeout: gapTimeout, pathsReadAt: pathsReadAt, into: &steps)
            return steps.isEmpty ? .held : .steps(steps)
        }
        if sequence == delivered + 1 && waitingSince == nil {
            delivered = sequence
            return .deliver(item)
        }
        var steps: [Step] = []
        if sequence == delivered + 1 {
            delivered = sequence
            steps.append(.deliver(item))
            releaseContiguous(into: &steps)
            waitingSince = held.isEmpty && !awaitsTail ? nil : now
        } else {
            let index = heldIndex(after: sequence)
            held.insert((sequence, item), at: index)
            if held.count > maximumHeld { held.removeLast(held.count - maximumHeld) }
            if waitingSince == nil { waitingSince = now }
        }
        settle(now: now, connected: connected, gapTimeout: gapTimeout, pathsReadAt: pathsReadAt, into: &steps)
        return steps.isEmpty ? .held : .steps(steps)
    }

    /// The end-of-stream record arrived on `path`: the stream's last sequence is `last`.
    mutating func endOfStream(
        last: UInt64, path: Int, now: UInt64, connected: UInt64, gapTimeout: UInt64, pathsReadAt: UInt64 = .max
    ) -> [Step] {
        endedPaths |= 1 << UInt64(path)
        if endedAt == nil { endedAt = now }
        if last > seen[path] { seen[path] = last }
        if last > (endSequence ?? 0) { endSequence = last }
        if waitingSince == nil && awaitsTail { waitingSince = now }
        var steps: [Step] = []
        settle(now: now, connected: connected, gapTimeout: gapTimeout, pathsReadAt: pathsReadAt, into: &steps)
        return steps
    }

    /// Declares every hole and awaited tail that no path can fill any more, or that was waited
    /// for `gapTimeout`, and releases what was held behind it; starts a stream whose start is
    /// settled. Call it when a path disconnects, when the paths' monitors were read, and when
    /// `deadline` passes.
    mutating func settle(now: UInt64, connected: UInt64, gapTimeout: UInt64, pathsReadAt: UInt64 = .max) -> [Step] {
        var steps: [Step] = []
        settle(now: now, connected: connected, gapTimeout: gapTimeout, pathsReadAt: pathsReadAt, into: &steps)
        return steps
    }

    private mutating func settle(
        now: UInt64, connected: UInt64, gapTimeout: UInt64, pathsReadAt: UInt64, into steps: inout [Step]
    ) {
        if !started {
            guard let first = held.first, let since = waitingSince else { return }
            // A path that is down is not waited for, but only once its monitor was read after the
            // stream's first arrival: libzmq reports a handshake before anything can pass over
            // that connection (the subscription itself goes out after it), yet the loop reads the
            // monitors every 64th busy round, so the report may still be unread when another
            // path's notifications are. Two brokers at a subscriber's start, a's handshake not
            // yet read, b's first copy 9 (the publisher posted 1...8 while only a's subscription
            // had reached it): taken as down, a was not waited for, the stream started at 9 as a
            // late join, and a's 1...8 were discarded as copies. That order of events explains
            // the one failure of `bothBrokersKilled` seen (8 missing at the start, no gap).
            let downIsCurrent = pathsReadAt > since
            let everyPathBrought = !seen.indices.contains { path in
                let bit: UInt64 = 1 << UInt64(path)
                return (connected & bit != 0 || !downIsCurrent) && endedPaths & bit == 0 && seen[path] == 0
            }
            guard first.sequence == 1 || everyPathBrought || now &- since >= min(gapTimeout, startWait) else { return }
            started = true
            startSequence = first.sequence
            delivered = first.sequence - 1
            releaseContiguous(into: &steps)
            waitingSince = held.isEmpty && !awaitsTail ? nil : now
        }
        while let since = waitingSince {
            let missing = delivered + 1
            let expired = now &- since >= gapTimeout
            if !expired && canStillBring(missing, connected: connected) { return }
            if let first = held.first {
                steps.append(.gap(missing...(first.sequence - 1)))
                delivered = first.sequence - 1
                releaseContiguous(into: &steps)
            } else if let end = endSequence, end >= missing {
                steps.append(.gap(missing...end))
                delivered = end
            }
            waitingSince = held.isEmpty && !awaitsTail ? nil : now
        }
    }

    /// The tail an end-of-stream record announced has not all arrived.
    private var awaitsTail: Bool {
        if let end = endSequence { return delivered < end }
        return false
    }

    /// Where `sequence` goes in `held` (ascending): the first index holding a larger one. A binary
    /// search: during a hole every arriving notification looks here, up to 65,536 held.
    private func heldIndex(after sequence: UInt64) -> Int {
        // The common case, a path running ahead: past the last one held.
        guard let last = held.last, last.sequence > sequence else { return held.endIndex }
        var low = 0
        var high = held.count
        while low < high {
            let middle = (low + high) / 2
            if held[middle].sequence > sequence { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Whether `sequence` is held.
    private func isHeld(_ sequence: UInt64) -> Bool {
        let index = heldIndex(after: sequence)
        return index > 0 && held[index - 1].sequence == sequence
    }

    /// Moves the held notifications that follow `delivered` without a hole into `steps`.
    private mutating func releaseContiguous(into steps: inout [Step]) {
        var count = 0
        for entry in held {
            guard entry.sequence == delivered + 1 else { break }
            delivered = entry.sequence
            steps.append(.deliver(entry.item))
            count += 1
        }
        held.removeFirst(count)
    }

    /// Whether a connected path that carries this stream has not passed `sequence` yet.
    private func canStillBring(_ sequence: UInt64, connected: UInt64) -> Bool {
        seen.indices.contains { path in carries(path, connected: connected) && seen[path] < sequence }
    }

    /// `path` is connected, brought this stream already, and has not ended it.
    private func carries(_ path: Int, connected: UInt64) -> Bool {
        let bit: UInt64 = 1 << UInt64(path)
        return connected & bit != 0 && endedPaths & bit == 0 && seen[path] > 0
    }
}
