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
    private var remote: Set<[UInt8]> = []
    /// Loopback subscriptions' prefixes, with how many subscriptions use each.
    private var local: [[UInt8]: Int] = [:]
    /// How many prefixes (remote and local) have each length: a name is looked up only at the
    /// lengths some prefix has (at most 257), so the cost follows the name, not the number of
    /// subscriptions.
    private var prefixLengths: [Int: Int] = [:]
    /// Names that were wanted (and so sent with sequence numbers) at least once.
    private var sentNames: Set<NotificationName> = []
    /// The last name asked about and the answer, until the prefixes change (a run of posts to
    /// one name, the common case, then costs one comparison of names).
    private var cached: (name: NotificationName, decision: Decision)?
    /// Earlier answers, until the prefixes change (bounded: emptied when full).
    private var answers: [NotificationName: Decision] = [:]
    private static let answerCapacity = 4_096
    /// The bus is closing or closed: posts are refused before they are looked at.
    var closed = false
    /// Posts skipped because no subscriber wanted them.
    private(set) var unwanted: UInt64 = 0
    /// Of `unwanted`: posts of a name sent before (`.unwantedAfterSending`), and of those the ones
    /// posted while a connection of the bus was down (`countDisconnected`).
    private(set) var unwantedAfterSending: UInt64 = 0
    private(set) var unwantedWhileDisconnected: UInt64 = 0

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
        } else if let known = answers[name] {
            decision = known
            cached = (name, decision)
        } else {
            if isCovered(name) {
                decision = .wanted
                sentNames.insert(name)
            } else {
                decision = sentNames.contains(name) ? .unwantedAfterSending : .unwanted
            }
            cached = (name, decision)
            if answers.count >= Self.answerCapacity { answers.removeAll(keepingCapacity: true) }
            answers[name] = decision
        }
        if decision != .wanted { unwanted &+= 1 }
        if decision == .unwantedAfterSending { unwantedAfterSending &+= 1 }
        return decision
    }

    /// The post just decided `.unwantedAfterSending` came while a connection was down.
    mutating func countDisconnected() {
        unwantedWhileDisconnected &+= 1
    }

    /// The XPUB saw `prefix` subscribed (`true`) or unsubscribed (the I/O thread calls this).
    mutating func changeRemote(_ prefix: [UInt8], subscribed: Bool) {
        if subscribed {
            if remote.insert(prefix).inserted { countLength(prefix.count, by: 1) }
        } else if remote.remove(prefix) != nil {
            countLength(prefix.count, by: -1)
        }
        forgetAnswers()
    }

    /// A loopback subscription's prefix comes (`subscribed`) or goes.
    mutating func changeLocal(_ prefix: [UInt8], subscribed: Bool) {
        let before = local[prefix] ?? 0
        let count = before + (subscribed ? 1 : -1)
        local[prefix] = count > 0 ? count : nil
        if before == 0 && count > 0 { countLength(prefix.count, by: 1) }
        if before > 0 && count <= 0 { countLength(prefix.count, by: -1) }
        forgetAnswers()
    }

    private mutating func countLength(_ length: Int, by delta: Int) {
        let count = (prefixLengths[length] ?? 0) + delta
        prefixLengths[length] = count > 0 ? count : nil
    }

    private mutating func forgetAnswers() {
        cached = nil
        answers.removeAll(keepingCapacity: true)
    }

    /// Whether a frame for `name` (its bytes, then NUL) starts with a subscribed prefix.
    private func isCovered(_ name: NotificationName) -> Bool {
        var text = name.rawValue
        let frameStart = text.withUTF8 { Array($0) } + [0]
        for length in prefixLengths.keys where length <= frameStart.count {
            let prefix = Array(frameStart[0..<length])
            if remote.contains(prefix) || local[prefix] != nil { return true }
        }
        return false
    }

    /// Whether a subscriber outside this bus (through its XPUB) wants `name`: a looped-back
    /// typed post is encoded only then (its own subscriptions take the value itself).
    func isWantedRemotely(_ name: NotificationName) -> Bool {
        guard !remote.isEmpty else { return false }
        return Self.covered(name, by: remote)
    }

    /// Whether a frame for `name` (its bytes, then NUL) starts with one of `prefixes`.
    static func covered<Prefixes: Sequence<[UInt8]>>(_ name: NotificationName, by prefixes: Prefixes) -> Bool {
        var text = name.rawValue
        let frameStart = text.withUTF8 { Array($0) } + [0]
        return prefixes.contains { frameStart.starts(with: $0) }
    }
}
