import Testing

@testable import NotificationBus

// The pace of subscriber handshakes at the broker (issue 38, item 2), fed by hand with an
// injected clock and forwarding-loop age (no sockets): a burst, then the rate; nothing while the
// loop lags; the oldest first; the queue and the wait bounded, and every outcome counted.
@Suite("SubscriberAdmission (socket-free, injected clock)")
struct SubscriberAdmissionTests {
    private static let ms: UInt64 = 1_000_000
    private static let well: UInt64 = 0
    private static let lagging: UInt64 = 1_000 * ms

    @Test("a burst goes at once, then the rate: 200 a second is one about each 5 ms")
    func burstThenRate() {
        var admission = SubscriberAdmission<Int>(settings: SubscriberAdmissionSettings(rate: 200, burst: 3))
        var answered: [Int] = []
        for request in 1...5 { answered += admission.arrived(request, now: 1_000 * Self.ms, forwarderAge: Self.well) }
        #expect(answered == [1, 2, 3])
        #expect(admission.waitingCount == 2)
        #expect(admission.held == 2)
        #expect(admission.retryMilliseconds == 5)
        #expect(admission.due(now: 1_004 * Self.ms, forwarderAge: Self.well).isEmpty)
        #expect(admission.due(now: 1_006 * Self.ms, forwarderAge: Self.well) == [4])
        #expect(admission.due(now: 1_011 * Self.ms, forwarderAge: Self.well) == [5])
        #expect(admission.retryMilliseconds == nil)
        #expect(admission.admitted == 5)
    }

    @Test("while the forwarding loop lags nobody goes; once it is well the oldest go first")
    func healthGates() {
        var admission = SubscriberAdmission<Int>(settings: SubscriberAdmissionSettings(rate: 1_000, burst: 10))
        for request in 1...4 {
            #expect(admission.arrived(request, now: 1_000 * Self.ms, forwarderAge: Self.lagging).isEmpty)
        }
        #expect(admission.due(now: 2_000 * Self.ms, forwarderAge: Self.lagging).isEmpty)
        #expect(admission.due(now: 2_001 * Self.ms, forwarderAge: 249 * Self.ms) == [1, 2, 3, 4])
        #expect(admission.held == 4)
        #expect(admission.abandoned == 0)
    }

    @Test("the queue and the wait are bounded: the oldest go unanswered, counted")
    func bounded() {
        var admission = SubscriberAdmission<Int>(
            settings: SubscriberAdmissionSettings(rate: 1, burst: 1, maximumWaiting: 3, maximumWait: 20_000 * Self.ms))
        // Over the bound: the oldest waiting one is dropped for each newcomer.
        for request in 1...5 { _ = admission.arrived(request, now: 1_000 * Self.ms, forwarderAge: Self.lagging) }
        #expect(admission.waitingCount == 3)
        #expect(admission.abandoned == 2)
        // Held past the longest wait: dropped, never answered.
        #expect(admission.due(now: 21_001 * Self.ms, forwarderAge: Self.well).isEmpty)
        #expect(admission.waitingCount == 0)
        #expect(admission.abandoned == 5)
        #expect(admission.admitted == 0)
    }

    @Test("a handshake whose connection ended before its turn costs no turn: the next goes in its place")
    func goneGiveTheirTurn() {
        var admission = SubscriberAdmission<Int>(settings: SubscriberAdmissionSettings(rate: 1, burst: 1))
        #expect(admission.arrived(1, now: 1_000 * Self.ms, forwarderAge: Self.well) == [1])
        #expect(admission.arrived(2, now: 1_000 * Self.ms, forwarderAge: Self.well).isEmpty)
        // 1's session had ended: the reply found nobody.
        admission.wasGone()
        #expect(admission.due(now: 1_000 * Self.ms, forwarderAge: Self.well) == [2])
        #expect(admission.admitted == 1)
        #expect(admission.gone == 1)
    }

    @Test("departures never outnumber admissions: 10 s of 1,000 handshakes a second let through at most 200 a second")
    func stormIsPaced() {
        var admission = SubscriberAdmission<Int>()
        var answered = 0
        var now: UInt64 = 1_000 * Self.ms
        for request in 0..<10_000 {
            now += Self.ms
            answered += admission.arrived(request, now: now, forwarderAge: Self.well).count
        }
        #expect(answered <= 20 + 10 * 200)
        #expect(answered >= 10 * 200 - 1)
    }
}
