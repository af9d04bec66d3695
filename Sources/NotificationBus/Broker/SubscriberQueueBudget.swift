import ZeroMQ

/// Turns a per-subscriber budget in bytes (`BrokerConfiguration.subscriberBudget`) into the
/// high-water mark libzmq counts in messages, once, when the socket is made.
///
/// The mark is the budget over the cost of a small frame (`smallFrame`, 256 bytes: one 200-byte
/// notification with its envelope) plus what libzmq keeps beside each queued message
/// (`messageOverhead`): so a burst of small notifications within the budget never reaches the mark,
/// however badly it was batched (one notification a frame at worst). Larger frames would let a
/// queue of that many messages hold more than the budget: for a subscriber that stops,
/// `SubscriberStallWatch` counts the bytes instead and disconnects it past the budget; one that
/// keeps taking something fills to the mark and makes the publishers wait (flow control), its
/// queue then up to mark × its frames, which the memory guard bounds (docs/deployment.md gives
/// the formula).
///
/// (An earlier mark assumed 2 KiB frames, half a full batch: a quiet machine batched a 150,000 ×
/// 256 B burst into 34,374 frames of 1.2 KB, 42 MB in all, past that mark of 30,840 though within
/// the 64 MiB, and the stopped subscriber was disconnected.)
///
/// The mark is never changed on a running socket: libzmq 4.3 (its current code too) applies a new
/// `ZMQ_SNDHWM` to every pipe of the socket by sending a command to each pipe's peer, and a pipe
/// whose peer has just finished terminating (a subscriber that left) makes that command land on
/// freed memory: the broker crashed with SIGSEGV on its I/O thread in 2 of 3 runs of a probe that
/// changed the mark while subscribers came and went. An earlier version of this type followed the
/// largest frame forwarded lately, for an exact bound in bytes, and did exactly that.
enum SubscriberQueueBudget {
    /// What libzmq keeps per queued message beyond its bytes: the 64-byte `zmq_msg_t` in the pipe
    /// and the shared content's header and allocation (measured in docs/benchmarks/latency-and-broker.md).
    static let messageOverhead = 128
    /// The frame size the mark assumes: a small notification's frame.
    static let smallFrame = 256

    /// The mark for `budget` bytes (none: `fixedMark`).
    static func mark(budget: Int, fixedMark: Int32) -> Int32 {
        budget > 0 ? mark(budget: budget, frame: smallFrame) : fixedMark
    }

    /// Messages of `frame` bytes that fit the budget (at least one).
    static func mark(budget: Int, frame: Int) -> Int32 {
        let cost = max(1, frame) + messageOverhead
        return Int32(clamping: max(1, budget / cost))
    }
}
