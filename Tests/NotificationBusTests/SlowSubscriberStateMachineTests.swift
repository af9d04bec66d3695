import Testing

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
        #expect(machine.state == .waiting(since: 1_000 * ms))
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

    @Test("a clock near the top of UInt64 does not trap")
    func hugeClockDoesNotTrap() {
        var machine = SlowSubscriberStateMachine(patienceNanoseconds: UInt64.max)
        // The deadline saturates at the top instead of wrapping to a small number (which would
        // declare the subscriber slow at once).
        #expect(machine.refused(now: UInt64.max - 2) == .retry(deadline: .max))
        #expect(machine.refused(now: UInt64.max - 1) == .retry(deadline: .max))
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
