import Testing
@testable import BusOperations

/// The decisions behind the warning a command logs when its bus cannot reach what it connects
/// to, with the clock as input.
@Suite("ConnectionWatch: warn once per outage, say when the connections are up")
struct ConnectionWatchTests {
    let start = ContinuousClock.now

    @Test("Never connected: one warning at the patience, a notice once connected, then silence")
    func neverConnected() {
        var watch = ConnectionWatch(expected: 2, patience: .seconds(3), startedAt: start)
        #expect(watch.observe(connected: 0, at: start + .seconds(1)) == .none)
        #expect(watch.observe(connected: 1, at: start + .milliseconds(2_900)) == .none)  // one of two is not enough
        #expect(watch.observe(connected: 1, at: start + .seconds(3)) == .warnNeverConnected(after: .seconds(3)))
        #expect(watch.observe(connected: 0, at: start + .seconds(10)) == .none)  // once per outage
        #expect(watch.observe(connected: 2, at: start + .seconds(12)) == .noticeConnected(after: .seconds(12)))
        #expect(watch.observe(connected: 2, at: start + .seconds(13)) == .none)
    }

    @Test("Connected in time: nothing is logged at all")
    func quietWhenWell() {
        var watch = ConnectionWatch(expected: 1, patience: .seconds(3), startedAt: start)
        #expect(watch.observe(connected: 1, at: start + .milliseconds(250)) == .none)
        #expect(watch.observe(connected: 1, at: start + .seconds(60)) == .none)
    }

    @Test("A connection lost later: a warning after the patience, counted from the loss; a short blip says nothing")
    func lostLater() {
        var watch = ConnectionWatch(expected: 1, patience: .seconds(3), startedAt: start)
        #expect(watch.observe(connected: 1, at: start + .seconds(1)) == .none)
        #expect(watch.observe(connected: 0, at: start + .seconds(20)) == .none)  // the outage begins
        #expect(watch.observe(connected: 1, at: start + .seconds(21)) == .none)  // back within the patience
        #expect(watch.observe(connected: 0, at: start + .seconds(30)) == .none)
        #expect(watch.observe(connected: 0, at: start + .seconds(33)) == .warnLost(after: .seconds(3)))
        #expect(watch.observe(connected: 1, at: start + .seconds(40)) == .noticeConnected(after: .seconds(10)))
    }

    @Test("Seconds with one decimal for the messages")
    func secondsText() {
        #expect(ConnectionWatch.seconds(.milliseconds(3_040)) == "3.0")
        #expect(ConnectionWatch.seconds(.milliseconds(12_960)) == "13.0")
        #expect(ConnectionWatch.seconds(.milliseconds(250)) == "0.3")
    }
}
