#if canImport(Glibc)
import Glibc
#endif
import Testing
import ZeroMQ

@testable import NotificationBus

// The broker's slow-subscriber decisions, fed by hand with an injected clock (no sockets): what
// a refused send leads to, when waiting ends, and when an episode starts and ends.
@Suite("SlowSubscriberStateMachine (socket-free, injected clock)")
struct SlowSubscriberStateMachineTests {
    let ms: UInt64 = 1_000_000

    @Test("a refusal waits (the broker holds the notification) until the patience runs out")
    func refusalWaitsWithinPatience() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: 500 * ms)
        #expect(machine.refused(now: 1_000 * ms) == .retry(deadline: 1_500 * ms))
        #expect(machine.state == .waiting(since: 1_000 * ms, heldSince: 1_000 * ms))
        // Retries inside the patience keep the first refusal's deadline.
        #expect(machine.refused(now: 1_200 * ms) == .retry(deadline: 1_500 * ms))
        #expect(machine.refused(now: 1_499 * ms) == .retry(deadline: 1_500 * ms))
    }

    @Test("room within the patience: nothing went past anybody, and the next refusal starts a fresh wait")
    func roomInTimeEndsTheWait() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: 500 * ms)
        _ = machine.refused(now: 0)
        #expect(machine.accepted(now: 400 * ms) == .nothing)
        #expect(machine.state == .flowing)
        #expect(machine.refused(now: 900 * ms) == .retry(deadline: 1_400 * ms))
    }

    @Test("no room for the whole patience: an episode starts, later refusals go past at once, it ends after a quiet spell")
    func episodeStartsAndEnds() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: 500 * ms, quietNanoseconds: 2_000 * ms)
        _ = machine.refused(now: 100 * ms)
        #expect(machine.refused(now: 600 * ms) == .sendPast(episodeStarted: true, since: 100 * ms))
        #expect(machine.refused(now: 601 * ms) == .sendPast(episodeStarted: false, since: 100 * ms))
        // libzmq takes the full pipe out of its list: the next sends are accepted, the episode goes on.
        #expect(machine.accepted(now: 602 * ms) == .nothing)
        #expect(machine.refused(now: 1_700 * ms) == .sendPast(episodeStarted: false, since: 100 * ms))
        #expect(machine.state == .slow(since: 100 * ms, sentPast: 3, lastRefusal: 1_700 * ms))
        #expect(machine.accepted(now: 3_699 * ms) == .nothing)
        #expect(machine.accepted(now: 3_700 * ms) == .episodeEnded(duration: 3_600 * ms, sentPast: 3))
        #expect(machine.state == .flowing)
        #expect(machine.accepted(now: 3_800 * ms) == .nothing)
        // A refusal after the episode waits again.
        #expect(machine.refused(now: 4_000 * ms) == .retry(deadline: 4_500 * ms))
    }

    @Test("patience 0: the first refusal goes past at once (a broker that never waits)")
    func zeroPatienceNeverWaits() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: 0, quietNanoseconds: 0)
        #expect(machine.refused(now: 5) == .sendPast(episodeStarted: true, since: 5))
        #expect(machine.accepted(now: 8) == .episodeEnded(duration: 3, sentPast: 1))
    }

    @Test("disconnectsStalled: the patience running out asks about the subscribers; disconnected ones start a new wait")
    func stalledSubscribersAreFoundFirst() {
        var machine = SlowSubscriberStateMachine(
            patienceNanoseconds: 500 * ms, quietNanoseconds: 2_000 * ms, disconnectsStalled: true, maximumHoldNanoseconds: 10_000 * ms)
        #expect(machine.refused(now: 100 * ms) == .retry(deadline: 600 * ms))
        #expect(machine.refused(now: 600 * ms) == .findStalled(heldSince: 100 * ms))
        #expect(machine.state == .finding(heldSince: 100 * ms))
        // Two disconnected: the others get a fresh hold, nothing went past anybody.
        #expect(machine.stalledFound(disconnected: 2, moving: 1, now: 601 * ms) == .retry(deadline: 1_101 * ms))
        #expect(machine.state == .waiting(since: 601 * ms, heldSince: 601 * ms))
        #expect(machine.accepted(now: 610 * ms) == .nothing)
        #expect(machine.state == .flowing)
    }

    @Test("disconnectsStalled: a subscriber slow but moving is waited for, patience after patience, up to the hold limit")
    func movingSubscribersAreWaitedFor() {
        var machine = SlowSubscriberStateMachine(
            patienceNanoseconds: 500 * ms, quietNanoseconds: 2_000 * ms, disconnectsStalled: true, maximumHoldNanoseconds: 1_200 * ms)
        _ = machine.refused(now: 0)
        #expect(machine.refused(now: 500 * ms) == .findStalled(heldSince: 0))
        #expect(machine.stalledFound(disconnected: 0, moving: 1, now: 501 * ms) == .retry(deadline: 1_001 * ms))
        #expect(machine.state == .waiting(since: 501 * ms, heldSince: 0))
        #expect(machine.refused(now: 1_001 * ms) == .findStalled(heldSince: 0))
        // The next wait is cut at the hold limit (1.2 s after the first refusal).
        #expect(machine.stalledFound(disconnected: 0, moving: 1, now: 1_002 * ms) == .retry(deadline: 1_200 * ms))
        #expect(machine.refused(now: 1_200 * ms) == .findStalled(heldSince: 0))
        #expect(machine.stalledFound(disconnected: 0, moving: 1, now: 1_201 * ms) == .sendPast(episodeStarted: true, since: 0))
        #expect(machine.state == .slow(since: 0, sentPast: 1, lastRefusal: 1_201 * ms))
    }

    @Test("disconnectsStalled: nothing known of any subscriber starts the episode as before")
    func nothingKnownStartsTheEpisode() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: 500 * ms, quietNanoseconds: 2_000 * ms, disconnectsStalled: true)
        _ = machine.refused(now: 0)
        #expect(machine.refused(now: 500 * ms) == .findStalled(heldSince: 0))
        #expect(machine.stalledFound(disconnected: 0, moving: 0, now: 501 * ms) == .sendPast(episodeStarted: true, since: 0))
        #expect(machine.refused(now: 502 * ms) == .sendPast(episodeStarted: false, since: 0))
    }

    @Test("disconnectsStalled: a refusal before the answer counts as nothing found; a stray answer changes nothing")
    func findingWithoutAnAnswer() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: 500 * ms, disconnectsStalled: true)
        _ = machine.refused(now: 0)
        _ = machine.refused(now: 500 * ms)
        #expect(machine.refused(now: 510 * ms) == .sendPast(episodeStarted: true, since: 0))
        var flowing = SlowSubscriberStateMachine(patienceNanoseconds: 500 * ms, disconnectsStalled: true)
        #expect(flowing.stalledFound(disconnected: 3, moving: 0, now: 10 * ms) == .retry(deadline: 510 * ms))
        #expect(flowing.state == .waiting(since: 10 * ms, heldSince: 10 * ms))
    }

    @Test("a clock near the top of UInt64 does not trap")
    func hugeClockDoesNotTrap() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: UInt64.max)
        // The deadline saturates at the top instead of wrapping to a small number (which would
        // declare the subscriber slow at once).
        #expect(machine.refused(now: UInt64.max - 2) == .retry(deadline: .max))
        #expect(machine.refused(now: UInt64.max - 1) == .retry(deadline: .max))
    }
}

// The per-subscriber budget in bytes as libzmq's mark in messages, and the stalled-connection test.
@Suite("SubscriberQueueBudget and StalledConnectionFinder (socket-free)")
struct SubscriberQueueBudgetTests {
    let overhead = SubscriberQueueBudget.messageOverhead

    @Test("the mark is the budget over a small 256-byte frame and the overhead, set once")
    func markFromTheBudget() {
        #expect(SubscriberQueueBudget.smallFrame == 256)
        #expect(SubscriberQueueBudget.mark(budget: 64 << 20, fixedMark: 10_000) == 174_762)
        // A 150,000-notification burst within the budget fits the mark even unbatched.
        #expect(SubscriberQueueBudget.mark(budget: 64 << 20, fixedMark: 10_000) > 150_000)
        // No budget: the mark in messages.
        #expect(SubscriberQueueBudget.mark(budget: 0, fixedMark: 10_000) == 10_000)
    }

    @Test("the bound: mark x cost of the frame it assumes stays within the budget")
    func markTimesCostWithinBudget() {
        for frame in [1, 33, 256, 4_096, 65_536, 1 << 20, 2 << 20] {
            let mark = Int(SubscriberQueueBudget.mark(budget: 64 << 20, frame: frame))
            #expect(mark * (frame + overhead) <= 64 << 20 || mark == 1)
            #expect((mark + 1) * (frame + overhead) > 64 << 20)
        }
        // A frame larger than the budget still gets one message's room.
        #expect(SubscriberQueueBudget.mark(budget: 1_000, frame: 5_000) == 1)
    }

    @Test("stalled: unsent bytes and a progress counter that has not moved; moving, empty, unknown or new ones are not")
    func stalledConnections() {
        var finder = StalledConnectionFinder()
        let (a, b, c, d, e) = (
            ConnectionDescriptor(7), ConnectionDescriptor(8), ConnectionDescriptor(9), ConnectionDescriptor(10), ConnectionDescriptor(11)
        )
        finder.begin([
            a: ConnectionSample(unsentBytes: 53_760, progress: 900),
            b: ConnectionSample(unsentBytes: 53_760, progress: 1_000),
            c: ConnectionSample(unsentBytes: 0, progress: 5),
            e: ConnectionSample(unsentBytes: 53_760, progress: nil),
        ])
        // a took nothing; b's queue looks the same (refilled at once) but its peer took some; c is
        // empty (idle, or drained); d appeared since (no baseline); e's progress cannot be read.
        let now: [ConnectionDescriptor: ConnectionSample] = [
            a: ConnectionSample(unsentBytes: 53_760, progress: 900),
            b: ConnectionSample(unsentBytes: 53_760, progress: 1_300),
            c: ConnectionSample(unsentBytes: 0, progress: 5),
            d: ConnectionSample(unsentBytes: 500, progress: 0),
            e: ConnectionSample(unsentBytes: 53_760, progress: nil),
        ]
        #expect(finder.stalled(now) == [a])
        #expect(finder.moving(now) == [b])
        #expect(finder.stalled([:]).isEmpty)
    }

    @Test("a process's CPU time is read from /proc (this one's moves as it works; a missing one is nil)")
    func processTicks() {
        let pid = getpid()
        let before = processCPUTicks(pid)
        #expect(before != nil)
        // Work until the count moves (a tick is 10 ms of CPU); a busy machine may take longer to
        // give this process that much, so the bound is generous and only a count that never moves fails.
        var after = before
        let start = ContinuousClock.now
        while after == before, ContinuousClock.now - start < .seconds(20) {
            var spin: UInt64 = 0
            for step in 0..<1_000_000 { spin &+= UInt64(step) }
            after = processCPUTicks(pid) ?? before
            #expect(spin > 0)
        }
        if let before, let after { #expect(after > before) }
        #expect(processCPUTicks(Int32.max) == nil)
    }
}

@Suite("BusConfiguration: publisher back-pressure by topology")
struct PublisherBackpressureDefaultTests {
    @Test("on for a publisher that only connects (to brokers), off for one that binds, as set when set")
    func defaultFollowsTheTopology() {
        #expect(BusConfiguration.brokered(frontend: "ipc:///tmp/f", backend: "ipc:///tmp/b").publisherBackpressure)
        #expect(BusConfiguration(publish: [.connect("tcp://127.0.0.1:1"), .connect("tcp://127.0.0.1:2")]).publisherBackpressure)
        #expect(!BusConfiguration.directPublisher(bind: "ipc:///tmp/p").publisherBackpressure)
        #expect(!BusConfiguration.embedded().publisherBackpressure)
        #expect(!BusConfiguration(publish: [.bind("tcp://127.0.0.1:*"), .connect("tcp://127.0.0.1:2")]).publisherBackpressure)
        #expect(!BusConfiguration(subscribe: [.connect("ipc:///tmp/b")]).publisherBackpressure)
        var configuration = BusConfiguration.brokered(frontend: "ipc:///tmp/f", backend: "ipc:///tmp/b")
        configuration.publisherBackpressure = false
        #expect(!configuration.publisherBackpressure)
        var direct = BusConfiguration.directPublisher(bind: "ipc:///tmp/p")
        direct.publisherBackpressure = true
        #expect(direct.publisherBackpressure)
    }
}

// The budget's byte side: which stopped subscribers passed it (socket-free, time as an input).
@Suite("SubscriberStallWatch (socket-free)")
struct SubscriberStallWatchTests {
    let a = ConnectionDescriptor(7)
    let b = ConnectionDescriptor(9)
    let patience: UInt64 = 500_000_000
    let mib: UInt64 = 1 << 20

    func sample(unsent: Int = 4_096, progress: UInt64?) -> ConnectionSample {
        ConnectionSample(unsentBytes: unsent, progress: progress)
    }

    @Test("stopped for the patience with more than the budget forwarded since: past it")
    func stoppedPastBudget() {
        var watch = SubscriberStallWatch(budget: 64 << 20, patienceNanoseconds: patience)
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 0, now: 0).isEmpty)
        // The budget passed before the patience ran out: not yet.
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 65 * mib, now: 400_000_000).isEmpty)
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 65 * mib, now: 500_000_000) == [a])
    }

    @Test("stopped for as long as you like within the budget: never past it")
    func stoppedWithinBudget() {
        var watch = SubscriberStallWatch(budget: 64 << 20, patienceNanoseconds: patience)
        _ = watch.observe([a: sample(progress: 10)], forwarded: 0, now: 0)
        for second in 1...60 {
            #expect(watch.observe([a: sample(progress: 10)], forwarded: 64 * mib, now: UInt64(second) * 1_000_000_000).isEmpty)
        }
    }

    @Test("any progress starts the count again; so does an empty queue")
    func progressRestarts() {
        var watch = SubscriberStallWatch(budget: 64 << 20, patienceNanoseconds: patience)
        _ = watch.observe([a: sample(progress: 10), b: sample(progress: 5)], forwarded: 0, now: 0)
        // a moved, b's queue emptied: neither is past, though 100 MiB went by.
        #expect(watch.observe([a: sample(progress: 11), b: sample(unsent: 0, progress: nil)], forwarded: 100 * mib, now: 1_000_000_000).isEmpty)
        // Counted from there: 60 more MiB is within the budget.
        #expect(watch.observe([a: sample(progress: 11), b: sample(progress: 5)], forwarded: 160 * mib, now: 2_000_000_000).isEmpty)
        // 70 more past a's last move: a is past; b's count started at its last sample (160 MiB).
        #expect(watch.observe([a: sample(progress: 11), b: sample(progress: 5)], forwarded: 170 * mib + 1, now: 3_000_000_000) == [a])
    }

    @Test("an unreadable progress counter is never called stopped")
    func unreadableCounter() {
        var watch = SubscriberStallWatch(budget: 1 << 20, patienceNanoseconds: patience)
        _ = watch.observe([a: sample(progress: nil)], forwarded: 0, now: 0)
        #expect(watch.observe([a: sample(progress: nil)], forwarded: 100 * mib, now: 10_000_000_000).isEmpty)
    }

    @Test("a connection gone is forgotten, and one taking its number starts afresh")
    func reusedDescriptor() {
        var watch = SubscriberStallWatch(budget: 1 << 20, patienceNanoseconds: patience)
        _ = watch.observe([a: sample(progress: 10)], forwarded: 0, now: 0)
        _ = watch.observe([:], forwarded: 50 * mib, now: 1_000_000_000)
        // The new connection under a's number has its own first sample here.
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 50 * mib, now: 2_000_000_000).isEmpty)
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 52 * mib, now: 3_000_000_000) == [a])
        watch.forget(a)
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 60 * mib, now: 4_000_000_000).isEmpty)
    }

    @Test("no budget: nobody is ever past it")
    func noBudget() {
        var watch = SubscriberStallWatch(budget: 0, patienceNanoseconds: patience)
        _ = watch.observe([a: sample(progress: 10)], forwarded: 0, now: 0)
        #expect(watch.observe([a: sample(progress: 10)], forwarded: 1 << 40, now: 100_000_000_000).isEmpty)
    }
}
