import Testing
import ZeroMQ

@testable import NotificationBus

// The byte side of the budget for a subscriber that moves, socket-free: samples (unsent bytes,
// progress, acknowledged bytes, send buffer), the bytes sent and the clock go in; what comes out
// is whom to hold for, whom to disconnect, and the headroom.
@Suite("SubscriberBacklogWatch (socket-free)")
struct SubscriberBacklogWatchTests {
    static let tcp = ConnectionDescriptor(7)
    static let ipc = ConnectionDescriptor(9)
    static let ms: UInt64 = 1_000_000
    static let mib: UInt64 = 1 << 20
    static let budget = 8 << 20

    func watch() -> SubscriberBacklogWatch {
        SubscriberBacklogWatch(budget: Self.budget, patienceNanoseconds: 500 * Self.ms, maximumHoldNanoseconds: 10_000 * Self.ms)
    }

    /// A TCP connection: `unsent` bytes in its kernel queue (a 4 MiB buffer), `acked` bytes
    /// acknowledged (its progress).
    func tcp(unsent: UInt64, acked: UInt64) -> ConnectionSample {
        ConnectionSample(unsentBytes: Int(unsent), progress: acked, acknowledged: acked, sendBuffer: 4 << 20)
    }

    /// An ipc connection: `unsent` bytes in its kernel queue, `cpu` its process's CPU ticks.
    func ipc(unsent: UInt64, cpu: UInt64) -> ConnectionSample {
        ConnectionSample(unsentBytes: Int(unsent), progress: cpu, acknowledged: nil)
    }

    @Test("TCP: what was sent since the queue emptied, less what the peer acknowledged; held for while past and moving")
    func tcpExact() {
        var watch = watch()
        let full: UInt64 = 4 << 20
        // First look: the kernel buffer full (past an eighth), 1 MiB sent so far.
        var look = watch.look([Self.tcp: tcp(unsent: full, acked: 100)], sent: 1 * Self.mib, now: 0)
        #expect(look.holdFor.isEmpty && look.headroom == UInt64(Self.budget) - full)
        // 10 MiB more sent, 3 MiB acknowledged: 4 + 10 - 3 = 11 MiB held, past 8: hold.
        look = watch.look([Self.tcp: tcp(unsent: full, acked: 100 + 3 * Self.mib)], sent: 11 * Self.mib, now: 100 * Self.ms)
        #expect(look.holdFor == [Self.tcp] && look.headroom == 0)
        #expect(watch.estimate(Self.tcp, sample: tcp(unsent: full, acked: 100 + 3 * Self.mib), sent: 11 * Self.mib) == 11 * Self.mib)
        // Nothing more sent, 4 MiB more acknowledged: 7 MiB, within: let go, 1 MiB of headroom.
        look = watch.look([Self.tcp: tcp(unsent: full, acked: 100 + 7 * Self.mib)], sent: 11 * Self.mib, now: 102 * Self.ms)
        #expect(look.holdFor.isEmpty && look.headroom == Self.mib)
    }

    @Test("a queue found empty at two looks with nothing sent between starts the count again: bytes for others are forgotten")
    func emptiedQueueResets() {
        var watch = watch()
        _ = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 0)], sent: 0, now: 0)
        // 20 MiB sent in all, most of it for other subscribers; its kernel queue empty: past by
        // the estimate (4 + 20 - 4), so the next look must come with nothing sent (confirm).
        var look = watch.look([Self.tcp: tcp(unsent: 0, acked: 4 << 20)], sent: 20 * Self.mib, now: 100 * Self.ms)
        #expect(look.confirm == [Self.tcp] && look.holdFor.isEmpty && look.headroom == 0)
        // Still empty, nothing sent since: its queue is empty, the count starts again.
        look = watch.look([Self.tcp: tcp(unsent: 0, acked: 4 << 20)], sent: 20 * Self.mib, now: 102 * Self.ms)
        #expect(look == SubscriberBacklogWatch.Look(headroom: UInt64(Self.budget)))
        // From there: 5 MiB more sent, 1 MiB acknowledged: 5 - 1 = 4 MiB held.
        look = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 5 << 20)], sent: 25 * Self.mib, now: 200 * Self.ms)
        #expect(look.holdFor.isEmpty && look.headroom == UInt64(Self.budget) - (4 << 20))
    }

    @Test("TCP: drained at two looks (a quarter of its buffer or less), the count restarts with what was sent since the first")
    func tcpTwoDrainedLooks() {
        var watch = watch()
        _ = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 0)], sent: 0, now: 0)
        // Drained once (512 KiB of a 4 MiB buffer): not enough; past by the estimate (4 + 20 - 4).
        var look = watch.look([Self.tcp: tcp(unsent: 512 << 10, acked: 4 << 20)], sent: 20 * Self.mib, now: 100 * Self.ms)
        #expect(look.holdFor == [Self.tcp])
        // Drained again, 3 MiB sent since: those may all be in libzmq's queue, and are counted.
        look = watch.look([Self.tcp: tcp(unsent: 256 << 10, acked: 5 << 20)], sent: 23 * Self.mib, now: 102 * Self.ms)
        #expect(look.holdFor.isEmpty && look.headroom == UInt64(Self.budget) - (256 << 10) - 3 * Self.mib)
    }

    @Test("ipc: one empty look, or two with bytes sent between, is not an empty queue (libzmq's I/O thread may be late)")
    func oneEmptyLookIsNotEnough() {
        var watch = watch()
        _ = watch.look([Self.ipc: ipc(unsent: 50_000, cpu: 1)], sent: 0, now: 0)
        _ = watch.look([Self.ipc: ipc(unsent: 0, cpu: 2)], sent: 6 * Self.mib, now: 100 * Self.ms)
        // Empty again, but 4 MiB were sent since: they may all be in libzmq's queue.
        let look = watch.look([Self.ipc: ipc(unsent: 0, cpu: 3)], sent: 10 * Self.mib, now: 104 * Self.ms)
        #expect(look.confirm == [Self.ipc])
        // 50,000 + 10 MiB - 3/4 of the 50,000 fall.
        #expect(watch.estimate(Self.ipc, sample: ipc(unsent: 0, cpu: 3), sent: 10 * Self.mib) == 50_000 + 10 * Self.mib - 37_500)
    }

    @Test("ipc: no acknowledged bytes, only three quarters of the kernel queue's falls count as drained")
    func ipcCountsFalls() {
        var watch = watch()
        _ = watch.look([Self.ipc: ipc(unsent: 200_000, cpu: 1)], sent: 0, now: 0)
        // 9 MiB sent; the queue fell by 100,000 bytes: 75,000 drained; 200,000 + 9 MiB - 75,000 held.
        var look = watch.look([Self.ipc: ipc(unsent: 100_000, cpu: 2)], sent: 9 * Self.mib, now: 50 * Self.ms)
        #expect(look.holdFor == [Self.ipc])
        #expect(watch.estimate(Self.ipc, sample: ipc(unsent: 100_000, cpu: 2), sent: 9 * Self.mib) == 200_000 + 9 * Self.mib - 75_000)
        // A rise (libzmq refilled it) drains nothing.
        look = watch.look([Self.ipc: ipc(unsent: 210_000, cpu: 3)], sent: 9 * Self.mib, now: 52 * Self.ms)
        #expect(look.holdFor == [Self.ipc])
        // Emptied; empty again 2 ms later with nothing sent: not yet (libzmq's I/O thread may be
        // starved); empty for 10 ms with nothing sent: the count restarts.
        look = watch.look([Self.ipc: ipc(unsent: 0, cpu: 4)], sent: 9 * Self.mib, now: 54 * Self.ms)
        #expect(look.confirm == [Self.ipc] && look.holdFor.isEmpty)
        look = watch.look([Self.ipc: ipc(unsent: 0, cpu: 4)], sent: 9 * Self.mib, now: 56 * Self.ms)
        #expect(look.confirm == [Self.ipc])
        look = watch.look([Self.ipc: ipc(unsent: 0, cpu: 4)], sent: 9 * Self.mib, now: 64 * Self.ms)
        #expect(look == SubscriberBacklogWatch.Look(headroom: UInt64(Self.budget)))
    }

    @Test("past its budget and moving for the longest hold: slow, disconnected; stopped for the patience: stalled")
    func slowAndStalled() {
        var watch = watch()
        _ = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 0), Self.ipc: ipc(unsent: 200_000, cpu: 1)], sent: 0, now: 0)
        var acked: UInt64 = 0
        var look = SubscriberBacklogWatch.Look()
        // The TCP one moves a little every 100 ms and stays past; the ipc one stopped at 0.
        for tick in 1...101 {
            acked += 1_000
            look = watch.look(
                [Self.tcp: tcp(unsent: 4 << 20, acked: acked), Self.ipc: ipc(unsent: 200_000, cpu: 1)], sent: 20 * Self.mib,
                now: UInt64(tick) * 100 * Self.ms)
            if tick == 4 { #expect(look.stalled.isEmpty && look.holdFor == [Self.tcp], "within the patience: neither held for nor cut") }
            if tick == 5 { #expect(look.stalled == [Self.ipc], "stopped for the patience") }
            if tick == 101 { break }
            #expect(look.slow.isEmpty, "tick \(tick)")
        }
        // Past since 100 ms; at 10.1 s it has been past for 10 s.
        #expect(look.slow == [Self.tcp] && look.holdFor.isEmpty)
    }

    @Test("a descriptor reused by a new TCP connection (its counter went back) starts again")
    func reusedDescriptor() {
        var watch = watch()
        _ = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 50 * Self.mib)], sent: 0, now: 0)
        let look = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 10)], sent: 30 * Self.mib, now: 100 * Self.ms)
        #expect(look.holdFor.isEmpty && look.slow.isEmpty && look.stalled.isEmpty)
        #expect(watch.estimate(Self.tcp, sample: tcp(unsent: 4 << 20, acked: 10), sent: 30 * Self.mib) == 4 << 20)
    }

    @Test("first seen: it may hold all that was sent since the last look, and at least its kernel queue")
    func firstSeen() {
        var watch = watch()
        _ = watch.look([:], sent: 1 * Self.mib, now: 0)
        // Accepted since, then sent 6 MiB before this look: 6 MiB may be held for it.
        var look = watch.look([Self.tcp: tcp(unsent: 1 << 20, acked: 0)], sent: 7 * Self.mib, now: 100 * Self.ms)
        #expect(look.headroom == UInt64(Self.budget) - 6 * Self.mib)
        // Another, its kernel queue (3 MiB) more than the 1 MiB sent since the last look.
        look = watch.look(
            [Self.tcp: tcp(unsent: 1 << 20, acked: 6 << 20), Self.ipc: ipc(unsent: 3 << 20, cpu: 1)], sent: 8 * Self.mib,
            now: 200 * Self.ms)
        #expect(look.headroom == UInt64(Self.budget) - 3 * Self.mib)
    }

    @Test("no budget: nothing is ever held for or cut")
    func noBudget() {
        var watch = SubscriberBacklogWatch(budget: 0, patienceNanoseconds: 500 * Self.ms, maximumHoldNanoseconds: 10_000 * Self.ms)
        _ = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 0)], sent: 0, now: 0)
        let look = watch.look([Self.tcp: tcp(unsent: 4 << 20, acked: 1)], sent: 1 << 40, now: 100 * Self.ms)
        #expect(look == SubscriberBacklogWatch.Look())
    }

    @Test("the policy holds while one past its budget moves, looks again every 2 ms, and when the headroom is used up")
    func policyHolds() {
        var policy = SubscriberBudgetPolicy(budget: Self.budget, patienceNanoseconds: 500 * Self.ms)
        let moving = { (acked: UInt64) in [Self.tcp: self.tcp(unsent: 4 << 20, acked: acked)] }
        var outcome = policy.look(moving(0), sent: 0, wireSent: 0, now: 0)
        #expect(!outcome.holdBegan && !policy.mustHold(wireSent: 3 * Self.mib))
        // 4 MiB of headroom used up: hold until looked at again (at most every 2 ms).
        #expect(policy.mustHold(wireSent: 4 * Self.mib))
        #expect(!policy.lookIsDue(now: 1 * Self.ms, wireSent: 4 * Self.mib))
        #expect(policy.lookIsDue(now: 2 * Self.ms, wireSent: 4 * Self.mib))
        outcome = policy.look(moving(1), sent: 6 * Self.mib, wireSent: 6 * Self.mib, now: 2 * Self.ms)
        #expect(outcome.holdBegan && policy.holdingForBacklog && policy.mustHold(wireSent: 6 * Self.mib))
        // It drained 3 MiB: 7 MiB held, within; let go.
        outcome = policy.look(moving(3 * Self.mib), sent: 6 * Self.mib, wireSent: 6 * Self.mib, now: 4 * Self.ms)
        #expect(!outcome.holdBegan && !policy.holdingForBacklog && !policy.mustHold(wireSent: 6 * Self.mib + 1))
        // A sender that holds nothing back (`holdsForBacklog` false) does not hold for it.
        var publisher = SubscriberBudgetPolicy(budget: Self.budget, patienceNanoseconds: 500 * Self.ms, holdsForBacklog: false)
        _ = publisher.look(moving(0), sent: 0, wireSent: 0, now: 0)
        _ = publisher.look(moving(1), sent: 20 * Self.mib, wireSent: 20 * Self.mib, now: 2 * Self.ms)
        #expect(!publisher.holdingForBacklog && !publisher.mustHold(wireSent: 40 * Self.mib))
        #expect(publisher.allowance(wireSent: 40 * Self.mib) == .max)
    }

    @Test("the allowance: the headroom less what was sent since the look, 0 exactly when the sender must hold")
    func allowance() {
        var policy = SubscriberBudgetPolicy(budget: Self.budget, patienceNanoseconds: 500 * Self.ms)
        let moving = { (acked: UInt64) in [Self.tcp: self.tcp(unsent: 4 << 20, acked: acked)] }
        _ = policy.look([:], sent: 0, wireSent: 8 * Self.mib, now: 0)
        _ = policy.look(moving(0), sent: 0, wireSent: 10 * Self.mib, now: 1 * Self.ms)
        // First seen with 4 MiB in its kernel queue (more than the 2 MiB sent since the last look):
        // 4 MiB held, 4 MiB of headroom from 10 MiB sent.
        for (sent, expected) in [(10 * Self.mib, 4 * Self.mib), (13 * Self.mib, Self.mib), (14 * Self.mib, 0), (20 * Self.mib, 0)] {
            #expect(policy.allowance(wireSent: sent) == expected, "after \(sent) bytes")
            #expect(policy.mustHold(wireSent: sent) == (expected == 0), "after \(sent) bytes")
        }
        // Holding for it: nothing, whatever was sent.
        _ = policy.look(moving(1), sent: 0, wireSent: 16 * Self.mib, now: 2 * Self.ms)
        #expect(policy.holdingForBacklog && policy.allowance(wireSent: 16 * Self.mib) == 0)
        let none = SubscriberBudgetPolicy(budget: 0, patienceNanoseconds: 500 * Self.ms)
        #expect(none.allowance(wireSent: 1 << 40) == .max)
    }

    @Test("wire bytes: ZMTP's 2 or 9 bytes of framing a part, CURVE's 33 more, its 255-byte limit counted with them")
    func wireBytes() {
        let rows: [(bytes: Int, parts: Int, curve: Bool, wire: UInt64)] = [
            (0, 1, false, 2), (255, 1, false, 257), (256, 1, false, 265), (4_000, 1, false, 4_009),
            (222, 1, true, 222 + 2 + 33), (223, 1, true, 223 + 9 + 33), (4_000, 1, true, 4_000 + 9 + 33),
            // Several parts: each counted long (an upper bound).
            (10, 2, false, 10 + 18), (10, 2, true, 10 + 2 * 42),
        ]
        for row in rows {
            #expect(SubscriberBacklogWatch.wireBytes(row.bytes, parts: row.parts, curve: row.curve) == row.wire, "\(row)")
        }
    }
}
