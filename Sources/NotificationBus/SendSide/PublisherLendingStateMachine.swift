#if canImport(Glibc)
import Glibc
#endif
import ZeroMQ

/// Who uses a bus's XPUB socket. The event loop holds it while it works and lends it while it
/// sleeps: a post made then is sent by the posting thread itself, with no hand-off and no wake-up
/// (the latency of a quiet bus is ZeroMQ's own). Under load the loop is awake, holds the socket,
/// and posts go through the mailbox in batches. The machine lives in the `Mailbox`, so every
/// input happens under the mailbox lock: the full memory barrier libzmq asks for when a socket
/// changes threads.
///
/// Only a bus with exactly one XPUB and no loopback lends it (`BusCore.directPublisher`): looped
/// back, local subscriptions get every post from the loop; with several brokers the loop sends
/// each post to every one of them (NBP-1 §17). Such a bus never feeds this machine, and neither
/// does a loop that cannot watch the lent socket through its `ZMQ_FD`.
///
///     loop --lend--> lent --claim--> poster --release--> lent --reclaim--> loop --close--> closed
///
/// The loop never takes the socket from a poster: reclaiming (or closing) during a direct send
/// waits it out. No sockets, no clock of its own: the posting thread and the loop feed it what
/// happened and the time, and do what it returns.
struct PublisherLendingStateMachine {
    enum State: Equatable {
        /// The event loop uses the socket (it is awake).
        case loop
        /// The loop sleeps and has lent the socket: the next post may take it.
        case lent
        /// A posting thread is sending one post on it.
        case poster
        /// The loop closed it (the bus is closing): it is never lent again.
        case closed
    }

    private(set) var state = State.loop
    /// When the last direct send ended (monotonic ns), for `directSendSpacing`.
    private(set) var lastRelease: UInt64 = 0
    /// Posts posting threads sent themselves, and those ZeroMQ rejected outright (counted in
    /// `BusStats.sent` and `unsent` with the loop's own).
    private(set) var sent: UInt64 = 0
    private(set) var unsent: UInt64 = 0
    /// The wire bytes of the posts posting threads sent themselves, ZMTP's framing included
    /// (`SubscriberBacklogWatch.wireBytes`): a binding publisher's subscriber budget counts every
    /// byte sent (`SubscriberBudgetPolicy`).
    private(set) var sentBytes: UInt64 = 0
    /// While lent: direct sends may go on until `sentBytes` reaches this; past it posts queue
    /// for the loop (which it wakes), so a binding publisher's posting threads never send past the
    /// headroom its subscriber budget left at its last look.
    private(set) var sentBytesLimit: UInt64 = .max

    /// Posts closer together than this (nanoseconds) go through the loop, not a direct send: a
    /// posting thread sending each of a burst itself would do on one core what the loop does on
    /// the other in batches (throughput), while a wake-up of the loop (20 to 35 us here) is
    /// what a sparse post saves (latency). A burst's first post goes directly, the rest wake the
    /// loop, which holds the socket until the burst is over.
    static let directSendSpacing: UInt64 = 50_000

    enum LendAction: Equatable {
        /// Lent: while it sleeps the loop watches the socket's `ZMQ_FD` only, never the socket.
        case lent
        /// The loop does not hold it (a poster does, or it is closed): nothing to lend.
        case notHeld
    }

    /// The loop is about to sleep (it holds the socket). Posting threads may send directly until
    /// their sends' wire bytes reach `allowance` (a binding publisher's budget headroom; by
    /// default no limit); the post that reaches it is the last.
    mutating func lend(allowance: UInt64 = .max) -> LendAction {
        guard state == .loop else { return .notHeld }
        state = .lent
        sentBytesLimit = allowance == .max ? .max : sentBytes &+ allowance
        return .lent
    }

    enum ClaimAction: Equatable {
        /// The posting thread owns the socket: it sends the post itself, then calls `release`.
        case sendDirectly
        /// The post goes through the outbound queue, for the loop.
        case queue
    }

    /// A posting thread has a post to send at `now`; `queueEmpty` says nothing waits in the
    /// outbound queue (a post sent directly must not overtake one queued before it). Once the
    /// lent allowance is used up, posts queue (the loop, woken, looks at its subscribers first).
    mutating func claim(now: UInt64, queueEmpty: Bool) -> ClaimAction {
        guard state == .lent, queueEmpty, now &- lastRelease > Self.directSendSpacing, sentBytes < sentBytesLimit
        else { return .queue }
        state = .poster
        return .sendDirectly
    }

    /// How a direct send went.
    enum SendOutcome: Equatable {
        case sent
        /// ZeroMQ would block (back-pressure): the post was not sent and is handed back.
        case refused
        /// ZeroMQ refused this frame outright: it cannot be retried, it is counted as unsent.
        case rejected
    }

    enum ReleaseAction: Equatable {
        /// Nothing for the loop to do now (it is awake, or sleeps with nothing new).
        case done
        /// Wake the loop: the send's command processing may have taken the XPUB's `ZMQ_FD`
        /// signal for subscription messages now waiting, or posts were queued meanwhile.
        case wakeLoop
        /// Put the refused post first in the outbound queue; the loop takes over (woken when asleep).
        case requeue(wakeLoop: Bool)
    }

    /// The posting thread's send ended at `now` with `outcome`: it gives the socket back.
    /// `inputWaiting`: the socket reports input (`ZMQ_EVENTS`) after the send; `queueEmpty`:
    /// nothing is queued for the loop; `loopSleeping`: the loop is parked (`Mailbox.sleeping`);
    /// `bytes`: the post's wire bytes (`SubscriberBacklogWatch.wireBytes` of its frame).
    mutating func release(
        _ outcome: SendOutcome, now: UInt64, inputWaiting: Bool, queueEmpty: Bool, loopSleeping: Bool, bytes: UInt64 = 0
    ) -> ReleaseAction {
        // Only a poster releases; the state check keeps a stray release from lending a socket
        // the loop holds.
        if state == .poster { state = .lent }
        lastRelease = now
        switch outcome {
        case .sent:
            sent += 1
            sentBytes &+= bytes
        case .rejected:
            unsent += 1
        case .refused:
            return .requeue(wakeLoop: loopSleeping)
        }
        return loopSleeping && (inputWaiting || !queueEmpty) ? .wakeLoop : .done
    }

    enum ReclaimAction: Equatable {
        /// The loop holds the socket.
        case taken
        /// A poster is sending (a few microseconds: one `zmq_msg_send`): yield and reclaim again.
        case waitForPoster
    }

    /// The loop woke and wants its socket back.
    mutating func reclaim() -> ReclaimAction {
        switch state {
        case .loop, .closed:
            return .taken
        case .lent:
            state = .loop
            return .taken
        case .poster:
            return .waitForPoster
        }
    }

    enum CloseAction: Equatable {
        /// The loop may close the socket: no poster uses it, and none ever will.
        case close
        /// A poster is sending: yield and close again.
        case waitForPoster
    }

    /// The bus is closing: the loop takes the socket for good before it closes it.
    mutating func close() -> CloseAction {
        guard state != .poster else { return .waitForPoster }
        state = .closed
        return .close
    }
}

/// A bus's XPUB as posting threads see it, for sends made while they own it
/// (`PublisherLendingStateMachine.State.poster`).
///
/// `@unchecked Sendable`: `socket` is used only by the owner `Mailbox.lending` names, and
/// ownership changes only under the mailbox lock (a full memory barrier), which is exactly what
/// libzmq requires of a socket used by more than one thread: never at once, a barrier between.
final class DirectPublisher: @unchecked Sendable {
    let socket: Socket
    /// The socket's connections are CURVE's (a binding publisher with `curveServer`): each frame
    /// takes 33 more bytes on the wire (`SubscriberBacklogWatch.wireBytes`).
    let curve: Bool

    init(_ socket: Socket, curve: Bool = false) {
        self.socket = socket
        self.curve = curve
    }
}
