/// Which frontend connection each publisher id belongs to, so that no peer of a broker can speak
/// for another publisher.
///
/// NBP/1 gives each publisher a random id of its own (NBP-1 §8), and subscribers track sequence
/// numbers and end-of-stream records by it (§15). Nothing in a frame proves it, so any peer of the
/// frontend could send `_nbus.eos.<id>` with another publisher's id and a final sequence of a
/// million (each subscriber then counts a million false losses, again at every replay), or a frame
/// with a live publisher's id and a sequence far ahead (a false gap), or old sequences again.
///
/// The rule: an id belongs to the first connection that sends a frame carrying it. Without CURVE
/// that is the connection itself (its descriptor, `ZMQ_SRCFD`); with CURVE it is the client key
/// the handshake proved (`User-Id`, which the broker's ZAP handler sets to the key), so the same
/// publisher reconnecting, on any connection, keeps its id. A frame that claims an id owned by
/// another connection (or key) is refused: not forwarded, never remembered for a replay, counted.
///
/// Bounded, because any peer can make up ids: a connection owns at most `idsPerConnection` (past
/// that its oldest id is forgotten, and simply bound again at its next frame), and the ids of a
/// connection that closed are forgotten with it. With CURVE they stay bound to their key, among
/// at most `departedCapacity` others (oldest forgotten first), so a publisher that crashed cannot
/// be impersonated by another key while its subscribers still track its streams.
///
/// Best effort where libzmq says nothing: a frame that carries no source descriptor (inproc) is
/// not checked, and the ids a connection ended by a memory reset held (libzmq reports no
/// disconnection then) are forgotten with all the others (`forgetAll`).
struct PublisherOwnership {
    /// Who sent a frame: its connection, and with CURVE the client's key.
    struct Claimant: Hashable, Sendable {
        var descriptor: Int32
        var key: String?
    }

    /// What to do with a frame.
    enum Verdict: Equatable {
        case accepted
        /// Another connection (or key) owns the id.
        case refused(owner: Claimant)
    }

    private struct Entry {
        var owner: Claimant
        /// False once the owner's connection closed (kept only with a key).
        var connected: Bool
    }

    /// A connection may own this many ids (a publisher has one; an `--upstream` link carries the
    /// ids of every publisher of the broker upstream).
    static let idsPerConnection = 1_024
    /// Ids kept bound to a key after their connection closed.
    static let departedCapacity = 4_096

    private var entries: [UInt64: Entry] = [:]
    /// The ids each open connection owns, oldest first.
    private var idsByDescriptor: [Int32: [UInt64]] = [:]
    /// Ids whose connection closed, still bound to their key, oldest first.
    private var departed: [UInt64] = []
    /// The last id accepted and from whom: a run of frames from one publisher costs a comparison.
    private var lastAccepted: (id: UInt64, claimant: Claimant)?

    /// Ids bound now (open connections' and departed keys').
    var count: Int { entries.count }

    /// The verdict on a frame carrying `id` from `claimant`; binds the id when nobody owns it.
    mutating func check(_ id: UInt64, from claimant: Claimant) -> Verdict {
        if let last = lastAccepted, last.id == id, last.claimant == claimant { return .accepted }
        guard let entry = entries[id] else {
            bind(id, to: claimant)
            return .accepted
        }
        if entry.connected && entry.owner == claimant {
            lastAccepted = (id, claimant)
            return .accepted
        }
        if let ownerKey = entry.owner.key {
            // Bound to a key: that key on any connection (a publisher that reconnected), nobody else.
            guard claimant.key == ownerKey else { return .refused(owner: entry.owner) }
        } else if entry.connected {
            // Bound to a connection that is still open. The same descriptor with a key now would
            // be a new connection on a reused descriptor, which a close would have forgotten.
            return .refused(owner: entry.owner)
        }
        release(id)
        bind(id, to: claimant)
        return .accepted
    }

    /// The connection on `descriptor` closed: its ids are forgotten, or with a key kept bound to it.
    mutating func connectionClosed(descriptor: Int32) {
        guard let ids = idsByDescriptor.removeValue(forKey: descriptor) else { return }
        if lastAccepted?.claimant.descriptor == descriptor { lastAccepted = nil }
        for id in ids {
            guard let entry = entries[id] else { continue }
            if entry.owner.key != nil {
                entries[id]?.connected = false
                departed.append(id)
            } else {
                entries[id] = nil
            }
        }
        if departed.count > Self.departedCapacity {
            let excess = departed.count - Self.departedCapacity
            for id in departed.prefix(excess) where entries[id]?.connected == false { entries[id] = nil }
            departed.removeFirst(excess)
        }
    }

    /// Every connection closed at once (a memory reset, which libzmq reports to no monitor), or
    /// the record of closings was lost: nothing is known to be open any more.
    mutating func forgetAll() {
        for descriptor in Array(idsByDescriptor.keys) { connectionClosed(descriptor: descriptor) }
        lastAccepted = nil
    }

    private mutating func bind(_ id: UInt64, to claimant: Claimant) {
        entries[id] = Entry(owner: claimant, connected: true)
        var ids = idsByDescriptor[claimant.descriptor, default: []]
        ids.append(id)
        if ids.count > Self.idsPerConnection {
            // Forgotten, not refused: this connection's next frame with it binds it again.
            let oldest = ids.removeFirst()
            if entries[oldest]?.owner.descriptor == claimant.descriptor { entries[oldest] = nil }
        }
        idsByDescriptor[claimant.descriptor] = ids
        lastAccepted = (id, claimant)
    }

    /// Takes `id` out of the lists of its current owner (open or departed).
    private mutating func release(_ id: UInt64) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        if entry.connected {
            idsByDescriptor[entry.owner.descriptor]?.removeAll { $0 == id }
        } else {
            departed.removeAll { $0 == id }
        }
        if lastAccepted?.id == id { lastAccepted = nil }
    }
}
