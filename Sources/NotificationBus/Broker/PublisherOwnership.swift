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
/// With CURVE, an id whose high 32 bits are a listed publisher key's first four bytes (NBP-1
/// §15.3; a NotificationBus publisher with CURVE makes its id so) belongs to that key alone, from
/// the list and not from memory: a restart, a memory reset or a crashed publisher gives nobody
/// else its ids. Ids without a listed key's tag (a foreign producer's random id) follow the
/// first-connection rule above.
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
        /// The connection the owner had before it redialled (`transfer`): what libzmq still
        /// holds of it is the same publisher's, read after the new connection's first frames.
        var previous: Int32?
    }

    /// A connection may own this many ids (a publisher has one; an `--upstream` link carries the
    /// ids of every publisher of the broker upstream).
    static let idsPerConnection = 1_024
    /// Ids kept bound to a key after their connection closed.
    static let departedCapacity = 4_096

    /// With CURVE: the keys each tag belongs to (NBP-1 §15.3), from the broker's list of
    /// publisher keys. An id tagged with listed keys is theirs alone, whatever the table says.
    private let listedTags: [UInt32: Set<String>]

    /// A table; `listedKeys`, with CURVE, the publisher keys the broker admits (Z85, with their
    /// decoded bytes), whose tagged ids nobody else may use.
    init(listedKeys: [(z85: String, bytes: [UInt8])] = []) {
        var tags: [UInt32: Set<String>] = [:]
        for key in listedKeys {
            guard let tag = PublisherKeyTag.tag(ofPublicKey: key.bytes) else { continue }
            tags[tag, default: []].insert(key.z85)
        }
        listedTags = tags
    }

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
        // A key's tagged id (NBP-1 §15.3) from another key: refused without looking at the table,
        // which a restart or a memory reset empties.
        if let key = claimant.key, let owners = listedTags[PublisherKeyTag.tag(of: id)], !owners.contains(key) {
            return .refused(owner: Claimant(descriptor: -1, key: owners.min()))
        }
        guard let entry = entries[id] else {
            bind(id, to: claimant)
            return .accepted
        }
        if entry.connected && entry.owner == claimant {
            lastAccepted = (id, claimant)
            return .accepted
        }
        // The rest of what its old connection brought, still being read.
        if entry.connected, let previous = entry.previous, previous == claimant.descriptor, claimant.key == entry.owner.key {
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

    /// The owner of `id` hung up (its peer closed the connection) and `claimant` uses the id now:
    /// the same publisher, redialled (a publisher drops a broker that made no progress for its
    /// stall limit, and dials again). It owns the id from now on; what its old connection still
    /// brings is accepted until that connection's close is read.
    mutating func transfer(_ id: UInt64, to claimant: Claimant) {
        guard let entry = entries[id], entry.connected else {
            release(id)
            bind(id, to: claimant)
            return
        }
        // Stays in the old connection's list, so that its close clears `previous`.
        entries[id] = Entry(owner: claimant, connected: true, previous: entry.owner.descriptor)
        list(id, under: claimant.descriptor)
        lastAccepted = (id, claimant)
    }

    /// The connection on `descriptor` closed: its ids are forgotten, or with a key kept bound to it.
    mutating func connectionClosed(descriptor: Int32) {
        guard let ids = idsByDescriptor.removeValue(forKey: descriptor) else { return }
        if lastAccepted?.claimant.descriptor == descriptor { lastAccepted = nil }
        for id in ids {
            guard let entry = entries[id] else { continue }
            if entry.owner.descriptor != descriptor {
                // A connection its owner left (`transfer`), or an id taken over since.
                if entry.previous == descriptor { entries[id]?.previous = nil }
                continue
            }
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
        list(id, under: claimant.descriptor)
        lastAccepted = (id, claimant)
    }

    /// Adds `id` to the ids of the connection on `descriptor`, within `idsPerConnection`.
    private mutating func list(_ id: UInt64, under descriptor: Int32) {
        var ids = idsByDescriptor[descriptor, default: []]
        ids.append(id)
        if ids.count > Self.idsPerConnection {
            // Forgotten, not refused: this connection's next frame with it binds it again.
            let oldest = ids.removeFirst()
            if entries[oldest]?.owner.descriptor == descriptor {
                entries[oldest] = nil
            } else if entries[oldest]?.previous == descriptor {
                entries[oldest]?.previous = nil
            }
        }
        idsByDescriptor[descriptor] = ids
    }

    /// Takes `id` out of the lists of its current owner (open or departed).
    private mutating func release(_ id: UInt64) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        if entry.connected {
            idsByDescriptor[entry.owner.descriptor]?.removeAll { $0 == id }
            if let previous = entry.previous { idsByDescriptor[previous]?.removeAll { $0 == id } }
        } else {
            departed.removeAll { $0 == id }
        }
        if lastAccepted?.id == id { lastAccepted = nil }
    }
}
