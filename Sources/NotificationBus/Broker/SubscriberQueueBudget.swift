import ZeroMQ

/// Turns the broker's per-subscriber budget in bytes (`BrokerConfiguration.subscriberBudget`) into
/// the backend's high-water mark, which libzmq counts in messages per subscriber connection.
///
/// The mark is the budget over the cost of the largest frame forwarded lately (its bytes plus what
/// libzmq keeps beside each queued message, `messageOverhead`). A larger frame lowers it before
/// that frame is sent (libzmq applies a new mark to the connections it already has), so while
/// frame sizes do not shrink, a subscriber's queue holds at most the budget plus one frame: every
/// message in it was admitted while fewer than budget ÷ (cost of the largest so far) were queued,
/// and none is larger than that largest. When frames get smaller the mark rises, by at most a
/// factor of two every `relaxInterval`, so a subscriber that stays stopped across such a change can
/// hold up to the budget once more per halving (docs/deployment.md gives the formula); the memory
/// guard is the backstop for the whole.
///
/// Socket-free: the forwarding loop reports each frame's size and the time, and applies the mark
/// it is given. Times are monotonic nanoseconds.
struct SubscriberQueueBudget {
    /// What libzmq keeps per queued message beyond its bytes: the 64-byte `zmq_msg_t` in the pipe
    /// and the shared content's header and allocation (measured in BENCHMARKS.md).
    static let messageOverhead = 128
    /// How often the mark may rise after frames got smaller.
    static let relaxInterval: UInt64 = 10_000_000_000

    /// The budget in bytes (zero: none, the mark stays `fixedMark`).
    let budget: Int
    /// The mark without a budget.
    let fixedMark: Int32
    /// The frame size the mark is computed from.
    private(set) var largestFrame = 0
    /// The largest frame of the window now running, and when it started (0: no frame yet).
    private var largestInWindow = 0
    private var windowStart: UInt64 = 0
    /// The mark in force.
    private(set) var mark: Int32

    init(budget: Int, fixedMark: Int32) {
        self.budget = budget
        self.fixedMark = fixedMark
        // Before the first frame nothing is queued; the first one sets the real mark.
        mark = budget > 0 ? Self.mark(budget: budget, frame: WireFormat.largestFrame()) : fixedMark
    }

    /// A frame of `bytes` is about to be forwarded: the new mark to apply first, if it changed.
    mutating func forwarding(frameBytes bytes: Int, now: UInt64) -> Int32? {
        guard budget > 0 else { return nil }
        if windowStart == 0 {
            windowStart = now
            largestFrame = bytes
            return apply()
        }
        largestInWindow = max(largestInWindow, bytes)
        if bytes > largestFrame {
            largestFrame = bytes
            return apply()
        }
        guard now &- windowStart >= Self.relaxInterval else { return nil }
        // A window without a frame as large: relax towards what it saw, at most by half.
        let target = max(largestInWindow, largestFrame / 2)
        windowStart = now
        largestInWindow = 0
        guard target < largestFrame else { return nil }
        largestFrame = target
        return apply()
    }

    private mutating func apply() -> Int32? {
        let new = Self.mark(budget: budget, frame: largestFrame)
        guard new != mark else { return nil }
        mark = new
        return new
    }

    /// Messages of `frame` bytes that fit the budget (at least one).
    static func mark(budget: Int, frame: Int) -> Int32 {
        let cost = max(1, frame) + messageOverhead
        return Int32(clamping: max(1, budget / cost))
    }
}

/// One subscriber connection as the broker sees it while it waits for room: what it holds unsent,
/// and a counter that moves whenever its peer takes anything (over TCP the bytes the peer
/// acknowledged; over ipc the peer process's CPU time; nil when neither can be read).
struct ConnectionSample: Hashable {
    var unsentBytes: Int
    var progress: UInt64?
}

/// Which subscriber connections made no progress at all while the broker waited for room.
///
/// Their unsent bytes cannot tell: a peer that reads is refilled by libzmq at once, so a queue at
/// its cap looks the same whether the peer took a megabyte meanwhile or nothing. The progress
/// counter can: a connection is stalled when it holds unsent bytes and its counter stands where it
/// stood when the wait began. One whose counter cannot be read is never called stalled (the broker
/// then sends past the full ones, as without this).
///
/// Socket-free: the loop samples the connections and asks.
struct StalledConnectionFinder {
    private var baseline: [ConnectionDescriptor: ConnectionSample] = [:]

    /// The wait began: remember each connection's sample.
    mutating func begin(_ samples: [ConnectionDescriptor: ConnectionSample]) {
        baseline = samples
    }

    /// The connections that hold unsent bytes and whose progress counter has not moved.
    func stalled(_ samples: [ConnectionDescriptor: ConnectionSample]) -> [ConnectionDescriptor] {
        samples.compactMap { descriptor, sample in
            guard sample.unsentBytes > 0, let progress = sample.progress,
                let before = baseline[descriptor]?.progress, before == progress
            else { return nil }
            return descriptor
        }.sorted { $0.rawValue < $1.rawValue }
    }

    /// The connections that hold unsent bytes and whose progress counter has moved: slow but
    /// taking something.
    func moving(_ samples: [ConnectionDescriptor: ConnectionSample]) -> [ConnectionDescriptor] {
        samples.compactMap { descriptor, sample in
            guard sample.unsentBytes > 0, let progress = sample.progress,
                let before = baseline[descriptor]?.progress, before != progress
            else { return nil }
            return descriptor
        }.sorted { $0.rawValue < $1.rawValue }
    }
}
