import ZeroMQ

/// The byte side of the budget for a subscriber that keeps moving: how many bytes the sender holds
/// for each subscriber connection (its libzmq queue and its kernel send buffer), estimated from
/// what was sent and what the connection shows, and which connections are past the budget.
///
/// libzmq counts a subscriber's queue in messages, and its mark is sized for small frames
/// (`SubscriberQueueBudget`), so a subscriber that is slow but moving could hold mark × its frames
/// (740 MB of full 4 KiB batches for a 64 MiB budget, 5.7 GB of the default 32 KiB ones). `SubscriberStallWatch` bounds one that
/// stops; this bounds one that moves: while one is past its budget and moving, the sender holds
/// back everybody's next frames (flow control: its publishers wait) until it is back within it.
///
/// The estimate, per connection, from the last moment its queue is taken to have been empty (a
/// *reset*: over TCP its kernel queue at most a quarter of its buffer at two looks in a row, over
/// ipc empty for `ipcEmptySpan` with nothing sent; libzmq, which writes whenever the kernel takes
/// more, then had nothing left for it):
///
///     held = kernel bytes at the reset + wire bytes sent since the look before − bytes drained since
///
/// Bytes drained: over TCP the bytes its peer acknowledged since (`tcpi_bytes_acked`, exact, the
/// sender counting its bytes with their framing); over ipc no counter exists, so only the falls of
/// its kernel queue seen between two looks count, at three quarters (the kernel counts an 8 KiB
/// write as about 9 KB: 1.09x measured). The estimate is never below what is held for a
/// subscriber of everything; for one of a part it is more (bytes for the others count too), and
/// over ipc most of what a subscriber takes is not seen: such a one is waited for sooner, never
/// later, and let go once its queue has emptied. A connection whose kernel queue is empty at a
/// look but whose estimate is past the budget holds everybody back for one look (2 ms) with
/// nothing sent, which either resets it or shows libzmq's queue was still full.
///
/// Verdicts, per connection past its budget with bytes in its kernel queue:
/// - moving (its progress counter moved within the last `movingWindow`): hold for it; once past
///   it for `maximumHoldNanoseconds` in a row, disconnect it (slow: it reconnects and counts the
///   gap, as NATS's slow-consumer rule, after flow control had its chance);
/// - not moving for the patience: disconnect it (stalled past its budget, as the stall watch).
///
/// Socket-free: the sender samples its connections and gives the bytes sent so far and the time.
struct SubscriberBacklogWatch {
    /// One connection since its last reset.
    private struct Entry {
        var sentAtReset: UInt64
        var acknowledgedAtReset: UInt64?
        var queuedAtReset: UInt64
        /// Over ipc: bytes seen drained (three quarters of the kernel queue's falls) since the reset.
        var drainedSeen: UInt64 = 0
        var lastQueued: UInt64
        /// The bytes sent in all at the last look, and whether its kernel queue was drained then.
        var lastSent: UInt64
        var lastDrained: Bool
        /// Over ipc: since when (and at which bytes sent) its kernel queue has been empty at
        /// every look with nothing sent.
        var emptySince: (at: UInt64, sent: UInt64)? = nil
        var progress: UInt64?
        var lastMoved: UInt64
        /// When it was first seen past its budget and moving, in a row.
        var pastSince: UInt64?
    }

    /// What a look found.
    struct Look: Equatable {
        /// Connections past their budget and moving: the sender holds back until they are within.
        var holdFor: [ConnectionDescriptor] = []
        /// Past their budget by the estimate with an empty kernel queue: the sender sends nothing
        /// until the next look, which resets them if their queue is still empty.
        var confirm: [ConnectionDescriptor] = []
        /// Past their budget and moving for the longest hold: disconnect them (slow).
        var slow: [ConnectionDescriptor] = []
        /// Past their budget and taking nothing for the patience: disconnect them (stalled).
        var stalled: [ConnectionDescriptor] = []
        /// How many more wire bytes may be sent before a connection could pass its budget (the
        /// budget less the largest estimate).
        var headroom: UInt64 = 0
    }

    let budget: UInt64
    let patienceNanoseconds: UInt64
    let maximumHoldNanoseconds: UInt64
    /// A connection whose progress moved this recently is moving (a tenth of a second: over ipc
    /// the counter is CPU time, in 10 ms ticks).
    static let movingWindow: UInt64 = 100_000_000
    /// Over ipc a queue is taken as empty once its kernel queue stayed empty, with nothing sent,
    /// for this long: libzmq's I/O thread, starved of CPU, can leave it empty with its own queue
    /// full for a few milliseconds (two looks 2 ms apart were fooled now and then beside two
    /// builds: peaks of 17-18 MB for a 4 MiB budget).
    static let ipcEmptySpan: UInt64 = 10_000_000
    private var entries: [ConnectionDescriptor: Entry] = [:]
    /// The bytes sent in all at the last look: a connection first seen now may hold any of those
    /// sent since.
    private var sentAtLastLook: UInt64 = 0

    init(budget: Int, patienceNanoseconds: UInt64, maximumHoldNanoseconds: UInt64) {
        self.budget = UInt64(max(0, budget))
        self.patienceNanoseconds = patienceNanoseconds
        self.maximumHoldNanoseconds = maximumHoldNanoseconds
    }

    /// The estimate for one connection now (nil: unknown).
    func estimate(_ descriptor: ConnectionDescriptor, sample: ConnectionSample, sent: UInt64) -> UInt64? {
        entries[descriptor].map { Self.held($0, sample: sample, sent: sent) }
    }

    private static func held(_ entry: Entry, sample: ConnectionSample, sent: UInt64) -> UInt64 {
        let drained: UInt64
        if let acknowledged = sample.acknowledged, let before = entry.acknowledgedAtReset {
            drained = acknowledged &- before
        } else {
            drained = entry.drainedSeen
        }
        let added = entry.queuedAtReset &+ (sent &- entry.sentAtReset)
        return added > drained ? added - drained : 0
    }

    /// The connections' samples at `now`, `sent` wire bytes sent in all so far. Connections
    /// missing from `samples` are forgotten.
    mutating func look(_ samples: [ConnectionDescriptor: ConnectionSample], sent: UInt64, now: UInt64) -> Look {
        var look = Look(headroom: budget)
        guard budget > 0 else { return look }
        var seen: [ConnectionDescriptor: Entry] = [:]
        seen.reserveCapacity(samples.count)
        for (descriptor, sample) in samples {
            let queued = UInt64(max(0, sample.unsentBytes))
            let fresh = Entry(
                sentAtReset: sent, acknowledgedAtReset: sample.acknowledged, queuedAtReset: queued, lastQueued: queued,
                lastSent: sent, lastDrained: sample.drained, progress: sample.progress, lastMoved: now)
            guard var entry = entries[descriptor] else {
                // First seen: it may hold anything sent since the last look (it was accepted
                // since, maybe right before a burst: a binding publisher sent it 4 MiB before its
                // first look, and held 8 MB for it), and at least its kernel queue.
                var first = fresh
                first.queuedAtReset = max(queued, sent &- sentAtLastLook)
                seen[descriptor] = first
                look.headroom = min(look.headroom, budget > first.queuedAtReset ? budget - first.queuedAtReset : 0)
                continue
            }
            // A descriptor reused by a new TCP connection: its counter starts again.
            let reused = (sample.acknowledged ?? .max) < (entry.acknowledgedAtReset ?? 0)
            if sample.progress != entry.progress {
                entry.progress = sample.progress
                entry.lastMoved = now
            }
            // Its queue is taken as empty at the previous look when its kernel queue was drained
            // (`ConnectionSample.drained`) at that look and at this one; what was sent since is
            // counted as held (it may all be in libzmq's queue yet). One drained look is not
            // enough: libzmq's I/O thread, busy reading publishers, leaves a kernel queue drained
            // a moment with its own queue full (over ipc at one look in three, in
            // BrokerMovingBudgetTests). Over ipc, not even two while the sender sends (the I/O
            // thread is then busiest): the peak there went from 6-7 MB to 10-20 MB for a 4 MiB
            // budget; only two looks with nothing sent between count. Over TCP two drained looks
            // kept the peak at 4.8-5.3 MB, and a subscriber of a part needs them (its estimate
            // counts the others' bytes until a reset): with the ipc rule the peers kit's filtered
            // subscriber ran at 0.83x, held back by its own over-count.
            if queued == 0 {
                if entry.emptySince?.sent != sent { entry.emptySince = (now, sent) }
            } else {
                entry.emptySince = nil
            }
            let emptied: Bool
            if sample.acknowledged != nil {
                emptied = sample.drained && entry.lastDrained
            } else {
                emptied = entry.emptySince.map { now &- $0.at >= Self.ipcEmptySpan } ?? false
            }
            let sentBefore = entry.lastSent
            entry.lastSent = sent
            entry.lastDrained = sample.drained
            if reused || emptied {
                var reset = fresh
                if !reused { reset.sentAtReset = sentBefore }
                reset.lastMoved = reused ? now : entry.lastMoved
                seen[descriptor] = reset
                let held = Self.held(reset, sample: sample, sent: sent)
                look.headroom = min(look.headroom, budget > held ? budget - held : 0)
                continue
            }
            if sample.acknowledged == nil, entry.lastQueued > queued {
                entry.drainedSeen &+= (entry.lastQueued - queued) / 4 * 3
            }
            entry.lastQueued = queued
            let held = Self.held(entry, sample: sample, sent: sent)
            look.headroom = min(look.headroom, budget > held ? budget - held : 0)
            // Over ipc, where what a subscriber takes is mostly unseen, the estimate of one that
            // keeps up climbs with the traffic: past half its budget with its kernel queue empty,
            // the sender pauses until the reset (`ipcEmptySpan`), before the headroom shrinks
            // towards nothing (then a look every 2 ms with little sent between).
            let confirmAt = sample.acknowledged == nil ? budget / 2 : budget
            if queued == 0, held > confirmAt {
                // Past by the estimate, its kernel queue empty: truly drained (over ipc, or a
                // subscriber of a part whose estimate counts the others' bytes), or libzmq's I/O
                // thread late. Hold one look with nothing sent: a second empty look resets it.
                look.confirm.append(descriptor)
            }
            if held <= budget {
                entry.pastSince = nil
            } else if queued == 0 {
                // Confirmed above.
            } else if now &- entry.lastMoved < Self.movingWindow {
                let since = entry.pastSince ?? now
                entry.pastSince = since
                if now &- since >= maximumHoldNanoseconds {
                    look.slow.append(descriptor)
                } else {
                    look.holdFor.append(descriptor)
                }
            } else if now &- entry.lastMoved >= patienceNanoseconds {
                look.stalled.append(descriptor)
            }
            seen[descriptor] = entry
        }
        entries = seen
        sentAtLastLook = sent
        look.holdFor.sort { $0.rawValue < $1.rawValue }
        look.confirm.sort { $0.rawValue < $1.rawValue }
        look.slow.sort { $0.rawValue < $1.rawValue }
        look.stalled.sort { $0.rawValue < $1.rawValue }
        return look
    }

    /// A connection the sender disconnected: forgotten (a new connection may take its number).
    mutating func forget(_ descriptor: ConnectionDescriptor) {
        entries[descriptor] = nil
    }

    /// What `bytes` in `parts` parts take on a connection (ZMTP 3): each part a flags byte and a
    /// size of 1 byte (up to 255) or 8; with CURVE each part is a MESSAGE command whose body adds
    /// 33 bytes (name, nonce, box, flags). Several parts: each counted as long (an upper bound).
    /// Every sender whose bytes this watch estimates counts them so (the broker's forwarder, a
    /// binding publisher's loop and its posting threads): over TCP what a peer acknowledged is
    /// subtracted from them, and an error per frame would add up between two empty queues.
    static func wireBytes(_ bytes: Int, parts: Int, curve: Bool) -> UInt64 {
        let extra = curve ? 33 : 0
        let framing = parts == 1 && bytes + extra <= 255 ? 2 : 9
        return UInt64(max(0, bytes)) &+ UInt64(max(0, parts)) &* UInt64(framing + extra)
    }
}
