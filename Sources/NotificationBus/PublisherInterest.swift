/// What a publisher's subscribers want, as far as posting threads need to know: the ZeroMQ
/// prefixes its XPUB has seen subscribed, and the prefixes of this bus's own subscriptions when
/// it delivers to itself without ZeroMQ (loopback). `post` asks it before encoding: a post no
/// prefix covers would be dropped by ZeroMQ's filter anyway, so it costs no encoding, no copy and
/// no hand-off to the I/O thread. A name never sent uses no sequence number (so a subscriber
/// that comes later sees no gap for what nobody wanted); a name sent before does, because a
/// subscriber of it may still be there, unknown to this publisher for a while (its broker
/// restarting), and must see what it missed as a gap.
///
/// Written by the I/O thread (remote prefixes) and by `Bus.subscribe` (local ones, before the
/// subscription is even queued, so a post right after a loopback subscribe is never skipped);
/// read by posting threads. Lives behind a `Mutex` in `BusCore`.
struct PublisherInterest {
    /// Prefixes subscribed at the XPUB (a set: the XPUB passes the first subscribe and the last
    /// unsubscribe of each).
    private var remote: [[UInt8]] = []
    /// Loopback subscriptions' prefixes, with how many subscriptions use each.
    private var local: [[UInt8]: Int] = [:]
    /// Names that were wanted (and so sent with sequence numbers) at least once.
    private var sentNames: Set<NotificationName> = []
    /// The last name asked about and the answer, until the prefixes change (a run of posts to
    /// one name, the common case, then costs one comparison of names).
    private var cached: (name: NotificationName, decision: Decision)?
    /// The bus is closing or closed: posts are refused before they are looked at.
    var closed = false
    /// Posts skipped because no subscriber wanted them.
    private(set) var unwanted: UInt64 = 0

    /// What to do with a post of a name.
    enum Decision: Equatable {
        /// Encode and send it.
        case wanted
        /// Skip it: nobody wants it, and it was never sent.
        case unwanted
        /// Skip it, but use its sequence number: it was sent before, so a subscriber this
        /// publisher does not know of right now may count it as a gap.
        case unwantedAfterSending
    }

    /// Whether a subscriber wants `name`; counts it as unwanted when not.
    mutating func decide(_ name: NotificationName) -> Decision {
        let decision: Decision
        if let cached, cached.name == name {
            decision = cached.decision
        } else {
            if Self.covered(name, by: remote) || Self.covered(name, by: local.keys) {
                decision = .wanted
                sentNames.insert(name)
            } else {
                decision = sentNames.contains(name) ? .unwantedAfterSending : .unwanted
            }
            cached = (name, decision)
        }
        if decision != .wanted { unwanted &+= 1 }
        return decision
    }

    /// The XPUB's prefixes now (the I/O thread calls this after they changed).
    mutating func setRemote<Prefixes: Sequence<[UInt8]>>(_ prefixes: Prefixes) {
        remote = Array(prefixes)
        cached = nil
    }

    /// A loopback subscription's prefix comes (`subscribed`) or goes.
    mutating func changeLocal(_ prefix: [UInt8], subscribed: Bool) {
        let count = (local[prefix] ?? 0) + (subscribed ? 1 : -1)
        local[prefix] = count > 0 ? count : nil
        cached = nil
    }

    /// Whether a frame for `name` (its bytes, then NUL) starts with one of `prefixes`.
    static func covered<Prefixes: Sequence<[UInt8]>>(_ name: NotificationName, by prefixes: Prefixes) -> Bool {
        var text = name.rawValue
        return text.withUTF8 { bytes in
            for prefix in prefixes where prefix.count <= bytes.count + 1 {
                let matched = prefix.withUnsafeBufferPointer { candidate -> Bool in
                    for index in 0..<candidate.count {
                        let byte = index < bytes.count ? bytes[index] : 0
                        if candidate[index] != byte { return false }
                    }
                    return true
                }
                if matched { return true }
            }
            return false
        }
    }
}
