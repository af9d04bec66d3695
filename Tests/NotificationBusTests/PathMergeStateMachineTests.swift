import Testing

@testable import NotificationBus

// The merge of one stream heard over several brokers, fed by hand with an injected clock and
// connection mask (no sockets): first copy wins, order kept, a gap only once no path can fill it.
@Suite("PathMergeStateMachine (socket-free, injected clock)")
struct PathMergeStateMachineTests {
    typealias Machine = PathMergeStateMachine<String>
    let ms: UInt64 = 1_000_000
    let both: UInt64 = 0b11
    var timeout: UInt64 { 2_000 * ms }

    /// What a disposition hands on, as text: `d:x` delivered, `g:a-b` a gap, `dup`, `held`.
    func outputs(_ disposition: Machine.Disposition) -> [String] {
        switch disposition {
        case .deliver(let item): ["d:\(item)"]
        case .duplicate: ["dup"]
        case .held: ["held"]
        case .steps(let steps): render(steps)
        }
    }

    func render(_ steps: [Machine.Step]) -> [String] {
        steps.map { step in
            switch step {
            case .deliver(let item): "d:\(item)"
            case .gap(let range): "g:\(range.lowerBound)-\(range.upperBound)"
            }
        }
    }

    /// Feeds `(path, sequence)` arrivals at time 0, all paths connected; the outputs in order.
    func feed(_ machine: inout Machine, _ arrivals: [(Int, UInt64)], now: UInt64 = 0, connected: UInt64 = 0b11) -> [String] {
        arrivals.flatMap { path, sequence in
            outputs(machine.received("\(sequence)", sequence: sequence, path: path, now: now, connected: connected, gapTimeout: timeout))
        }
    }

    @Test("two paths bringing the same stream: each sequence handed on once, the later copies discarded")
    func firstCopyWins() {
        var machine = Machine(paths: 2)
        let out = feed(&machine, [(0, 1), (0, 2), (1, 1), (0, 3), (1, 2), (1, 3), (1, 4), (0, 4)])
        #expect(out == ["d:1", "d:2", "dup", "d:3", "dup", "dup", "d:4", "dup"])
        #expect(!machine.isWaiting)
    }

    @Test("a hole on the leading path is held while the other path, behind, can still fill it")
    func holeFilledByTheOtherPath() {
        var machine = Machine(paths: 2)
        // Both paths carry the stream; path 0 loses 3 and 4 (its broker died), path 1 is behind.
        #expect(feed(&machine, [(0, 1), (1, 1), (0, 2), (0, 5), (0, 6)]) == ["d:1", "dup", "d:2", "held", "held"])
        #expect(machine.isWaiting)
        #expect(machine.deadline(gapTimeout: timeout) == timeout)
        // Path 1 brings 2 (a copy), then the missing 3 and 4: everything in order, nothing lost.
        #expect(feed(&machine, [(1, 2), (1, 3)]) == ["dup", "d:3"])
        #expect(feed(&machine, [(1, 4)]) == ["d:4", "d:5", "d:6"])
        #expect(!machine.isWaiting)
        #expect(feed(&machine, [(1, 5), (1, 6), (1, 7), (0, 7)]) == ["dup", "dup", "d:7", "dup"])
    }

    @Test("a hole is a gap at once when every other path has passed it")
    func holeEveryPathPassed() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (1, 1), (1, 2), (1, 6)])
        // Path 1 jumped 3...5 too; path 0 is behind (at 1) and can still bring them.
        #expect(machine.isWaiting)
        // Path 0 jumps past them as well (its broker lost them too): no path can bring 3...5.
        #expect(feed(&machine, [(0, 7)]) == ["g:3-5", "d:6", "d:7"])
        #expect(!machine.isWaiting)
    }

    @Test("a hole is a gap when the only path that could fill it disconnects")
    func holeWhenThePathDisconnects() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (1, 1), (0, 2), (0, 4)])
        #expect(machine.isWaiting)
        // Still connected: nothing yet. Path 1 disconnects: 3 can come from nowhere.
        #expect(render(machine.settle(now: 10 * ms, connected: both, gapTimeout: timeout)).isEmpty)
        #expect(render(machine.settle(now: 10 * ms, connected: 0b01, gapTimeout: timeout)) == ["g:3-3", "d:4"])
        #expect(!machine.isWaiting)
    }

    @Test("a hole is a gap when its wait runs out, and a late copy of it is then a duplicate")
    func holeTimesOut() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (1, 1), (0, 3)], now: 100 * ms)
        #expect(machine.deadline(gapTimeout: timeout) == 2_100 * ms)
        #expect(render(machine.settle(now: 2_099 * ms, connected: both, gapTimeout: timeout)).isEmpty)
        #expect(render(machine.settle(now: 2_100 * ms, connected: both, gapTimeout: timeout)) == ["g:2-2", "d:3"])
        // The frozen path wakes up and brings 2 and 3: both already accounted for.
        #expect(feed(&machine, [(1, 2), (1, 3), (1, 4)]) == ["dup", "dup", "d:4"])
    }

    @Test("a path that never brought the stream is not waited for (a direct subscriber of several publishers)")
    func pathThatNeverCarriedIsNotWaitedFor() {
        var machine = Machine(paths: 2)
        #expect(feed(&machine, [(0, 1), (0, 2), (0, 5)]) == ["d:1", "d:2", "g:3-4", "d:5"])
        #expect(!machine.isWaiting)
    }

    @Test("a stream's start waits for the other paths: an older first notification a slower path brings is delivered first, in order")
    func firstNotificationStartsTheStream() {
        var machine = Machine(paths: 2)
        // Path 1 brings 40 first; path 0, a moment behind, still brings 39: both delivered, in order.
        #expect(feed(&machine, [(1, 40), (0, 39), (0, 40), (0, 41)]) == ["held", "d:39", "d:40", "dup", "d:41"])
        // A stream whose first notification is 1 starts at once.
        var fromOne = Machine(paths: 2)
        #expect(feed(&fromOne, [(1, 1)]) == ["d:1"])
    }

    @Test("a path that brings nothing of a new stream is waited for at most the start wait, then the stream starts at the oldest held")
    func startWaitRunsOut() {
        var machine = Machine(paths: 2, startWait: 1_000 * ms)
        #expect(feed(&machine, [(1, 40), (1, 41)], now: 0) == ["held", "held"])
        #expect(machine.deadline(gapTimeout: timeout) == 1_000 * ms)
        #expect(render(machine.settle(now: 999 * ms, connected: both, gapTimeout: timeout)).isEmpty)
        #expect(render(machine.settle(now: 1_000 * ms, connected: both, gapTimeout: timeout)) == ["d:40", "d:41"])
        // Path 0 down: nothing to wait for, it starts at once.
        var alone = Machine(paths: 2)
        #expect(feed(&alone, [(1, 40)], connected: 0b10) == ["d:40"])
    }

    @Test("a path down is not waited for at a stream's start only once its monitor was read after the first arrival")
    func startWaitsForAPathDownUntilItsMonitorIsRead() {
        // Path 0's connection is up but its monitor not read yet (the receiver thinks it down);
        // path 1 brings 9 first, read at 5 ms, the monitors last read at 4 ms: held.
        var machine = Machine(paths: 2, startWait: 1_000 * ms)
        #expect(
            outputs(machine.received("9", sequence: 9, path: 1, now: 5 * ms, connected: 0b10, gapTimeout: timeout, pathsReadAt: 4 * ms))
                == ["held"])
        // The monitors read at 6 ms say path 0 is up: it is waited for, and brings 1...9.
        #expect(render(machine.settle(now: 6 * ms, connected: both, gapTimeout: timeout, pathsReadAt: 6 * ms)).isEmpty)
        let early = (1...9).flatMap { sequence in
            outputs(machine.received("\(sequence)", sequence: sequence, path: 0, now: 7 * ms, connected: both, gapTimeout: timeout, pathsReadAt: 6 * ms))
        }
        #expect(early == ["d:1", "d:2", "d:3", "d:4", "d:5", "d:6", "d:7", "d:8", "d:9", "dup"])
        #expect(!machine.isWaiting)
        // Really down: once a reading after the arrival says so, the stream starts at the oldest held.
        var down = Machine(paths: 2, startWait: 1_000 * ms)
        #expect(
            outputs(down.received("9", sequence: 9, path: 1, now: 5 * ms, connected: 0b10, gapTimeout: timeout, pathsReadAt: 4 * ms))
                == ["held"])
        // A reading at the very moment of the arrival may have come before it: still held.
        #expect(render(down.settle(now: 5 * ms, connected: 0b10, gapTimeout: timeout, pathsReadAt: 5 * ms)).isEmpty)
        #expect(render(down.settle(now: 6 * ms, connected: 0b10, gapTimeout: timeout, pathsReadAt: 6 * ms)) == ["d:9"])
        #expect(down.startSequence == 9)
    }

    @Test("held notifications keep their order whatever order the holes fill in")
    func orderKeptAcrossSeveralHoles() {
        var machine = Machine(paths: 3)
        _ = feed(&machine, [(0, 1), (1, 1), (2, 1)], connected: 0b111)
        #expect(feed(&machine, [(0, 3), (0, 6)], connected: 0b111) == ["held", "held"])
        #expect(feed(&machine, [(2, 5)], connected: 0b111) == ["held"])
        #expect(machine.held.map(\.sequence) == [3, 5, 6])
        #expect(feed(&machine, [(1, 2)], connected: 0b111) == ["d:2", "d:3"])
        #expect(feed(&machine, [(1, 4)], connected: 0b111) == ["d:4", "d:5", "d:6"])
    }

    @Test("end of stream: the tail is awaited while a connected path is behind it, then the stream can be forgotten")
    func endOfStreamAwaitsTheTail() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (1, 1), (0, 2), (0, 3), (1, 2)])
        // Path 0's record says the stream ended at 5; path 0 lost 4 and 5, path 1 is at 2.
        #expect(render(machine.endOfStream(last: 5, path: 0, now: 0, connected: both, gapTimeout: timeout)).isEmpty)
        #expect(machine.isWaiting)
        #expect(!machine.isFinished(now: 0, gapTimeout: timeout))
        #expect(feed(&machine, [(1, 3), (1, 4), (1, 5)]) == ["dup", "d:4", "d:5"])
        #expect(!machine.isWaiting)
        // Path 1 has passed the end: no copy can come any more.
        #expect(machine.isFinished(now: 0, gapTimeout: timeout))
    }

    @Test("end of stream with a path behind that then ends too: the tail no path brought is one gap")
    func endOfStreamTailLostOnEveryPath() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (1, 1), (0, 2)])
        #expect(render(machine.endOfStream(last: 4, path: 0, now: 0, connected: both, gapTimeout: timeout)).isEmpty)
        #expect(render(machine.endOfStream(last: 4, path: 1, now: 0, connected: both, gapTimeout: timeout)) == ["g:3-4"])
        #expect(machine.isFinished(now: 0, gapTimeout: timeout))
    }

    @Test("end of stream on one path while the other, up to date, keeps the stream until its own copies are through")
    func endOfStreamTombstone() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (0, 2), (1, 1)])
        #expect(render(machine.endOfStream(last: 2, path: 0, now: 0, connected: both, gapTimeout: timeout)).isEmpty)
        // Path 1 is connected and behind the end: its copy of 2 must still be recognised.
        #expect(!machine.isFinished(now: 0, gapTimeout: timeout))
        #expect(feed(&machine, [(1, 2)]) == ["dup"])
        #expect(machine.isFinished(now: 0, gapTimeout: timeout))
        // Path 1 up to date when the record comes: finished at once.
        var other = Machine(paths: 2)
        _ = feed(&other, [(0, 1), (1, 1)])
        _ = other.endOfStream(last: 1, path: 0, now: 0, connected: both, gapTimeout: timeout)
        #expect(other.isFinished(now: 0, gapTimeout: timeout))
        // Path 1 behind and down (its broker cut this subscriber off as stalled): it reconnects and
        // may still be sent the rest, so the stream is kept; its copies are then still copies.
        var third = Machine(paths: 2)
        _ = feed(&third, [(0, 1), (0, 2), (0, 3), (1, 1)])
        #expect(render(third.endOfStream(last: 3, path: 0, now: 0, connected: 0b01, gapTimeout: timeout)).isEmpty)
        #expect(!third.isFinished(now: 0, gapTimeout: timeout))
        #expect(feed(&third, [(1, 2), (1, 3)]) == ["dup", "dup"])
        #expect(third.isFinished(now: 0, gapTimeout: timeout))
    }

    /// A path that brought nothing of a stream when its end-of-stream record came on the other.
    struct SilentPathCase: CustomTestStringConvertible, Sendable {
        let label: String
        /// What path 1 does after path 0 brought 1...5 and its record (last 5), and when (ms after the record).
        let then: [(action: Action, at: UInt64)]
        /// What path 1's copies became, in order.
        let outputs: [String]
        /// Whether the stream can be forgotten afterwards, at `checkedAt` ms after the record.
        let finished: Bool
        let checkedAt: UInt64
        enum Action: Sendable { case copy(UInt64), endOfStream }
        var testDescription: String { label }
    }

    static let silentPathCases: [SilentPathCase] = [
        .init(label: "its copies arrive later: each a duplicate, then nothing more can come",
              then: (1...5).map { (.copy($0), 1) }, outputs: ["dup", "dup", "dup", "dup", "dup"], finished: true, checkedAt: 1),
        .init(label: "nothing yet: the stream is kept (forgotten, its copies would be delivered again)",
              then: [], outputs: [], finished: false, checkedAt: 1),
        .init(label: "nothing yet, just under the gap timeout after the record: still kept",
              then: [], outputs: [], finished: false, checkedAt: 1_999),
        .init(label: "nothing for the gap timeout: a path that never carries it (direct, several publishers)",
              then: [], outputs: [], finished: true, checkedAt: 2_000),
        .init(label: "its own record, no copy (its broker lost them): nothing more can come",
              then: [(.endOfStream, 1)], outputs: [], finished: true, checkedAt: 1),
        .init(label: "part of its copies: kept while it is behind the end",
              then: [(.copy(1), 1), (.copy(2), 1)], outputs: ["dup", "dup"], finished: false, checkedAt: 2_000),
    ]

    @Test("a burst and its end of stream on one path before the other brought any of it: kept until the other path's copies are through", arguments: silentPathCases)
    func endOfStreamBeforeTheOtherPathBroughtAny(_ row: SilentPathCase) {
        var machine = Machine(paths: 2)
        // Path 0: the whole stream in one batch frame, then its publisher's record (it closed).
        #expect(feed(&machine, (1...5).map { (0, $0) }) == ["d:1", "d:2", "d:3", "d:4", "d:5"])
        #expect(render(machine.endOfStream(last: 5, path: 0, now: 0, connected: both, gapTimeout: timeout)).isEmpty)
        #expect(!machine.isWaiting, "nothing awaited: every notification was handed on")
        var outputs: [String] = []
        for (action, at) in row.then {
            switch action {
            case .copy(let sequence): outputs += feed(&machine, [(1, sequence)], now: at * ms)
            case .endOfStream: outputs += render(machine.endOfStream(last: 5, path: 1, now: at * ms, connected: both, gapTimeout: timeout))
            }
        }
        #expect(outputs == row.outputs)
        #expect(machine.isFinished(now: row.checkedAt * ms, gapTimeout: timeout) == row.finished)
    }

    @Test("gapTimeout zero: a path that brought nothing of an ended stream is still waited for the start wait, never delivered twice")
    func endOfStreamBeforeTheOtherPathWithZeroTimeout() {
        var machine = Machine(paths: 2, startWait: 1_000 * ms)
        for sequence: UInt64 in 1...3 {
            _ = machine.received("\(sequence)", sequence: sequence, path: 0, now: 0, connected: both, gapTimeout: 0)
        }
        _ = machine.endOfStream(last: 3, path: 0, now: 0, connected: both, gapTimeout: 0)
        #expect(!machine.isFinished(now: 999 * ms, gapTimeout: 0))
        #expect(outputs(machine.received("1", sequence: 1, path: 1, now: 10 * ms, connected: both, gapTimeout: 0)) == ["dup"])
        var silent = Machine(paths: 2, startWait: 1_000 * ms)
        _ = silent.received("1", sequence: 1, path: 0, now: 0, connected: both, gapTimeout: 0)
        _ = silent.endOfStream(last: 1, path: 0, now: 0, connected: both, gapTimeout: 0)
        #expect(silent.isFinished(now: 1_000 * ms, gapTimeout: 0))
    }

    @Test("past the hold bound the newest held let go: the path behind brings them again, nothing lost, order kept")
    func holdBound() {
        var machine = Machine(paths: 2, maximumHeld: 2)
        _ = feed(&machine, [(0, 1), (1, 1)])
        // Path 0 (a restarted broker, empty queues) runs ahead past a hole: only 2 are held.
        #expect(feed(&machine, [(0, 4), (0, 5), (0, 6), (0, 7)]) == ["held", "held", "held", "held"])
        #expect(machine.held.map(\.sequence) == [4, 5])
        // Path 1, behind, brings everything in order: 6 and 7 are not duplicates, they are delivered.
        #expect(feed(&machine, [(1, 2), (1, 3)]) == ["d:2", "d:3", "d:4", "d:5"])
        #expect(feed(&machine, [(1, 4), (1, 5), (1, 6), (1, 7)]) == ["dup", "dup", "d:6", "d:7"])
        // Had path 1 lost them too, they would be a hole like any other, counted once no path can fill it.
        var other = Machine(paths: 2, maximumHeld: 1)
        _ = feed(&other, [(0, 1), (1, 1), (0, 3), (0, 4)])
        #expect(feed(&other, [(1, 2), (1, 5)]) == ["d:2", "d:3", "g:4-4", "d:5"])
    }

    @Test("gapTimeout zero: a hole is a gap at once, as with one path")
    func zeroTimeout() {
        var machine = Machine(paths: 2)
        _ = feed(&machine, [(0, 1), (1, 1)])
        let out = outputs(machine.received("4", sequence: 4, path: 0, now: 0, connected: both, gapTimeout: 0))
        #expect(out == ["g:2-3", "d:4"])
    }
}

@Suite("PublisherStateMachine with several brokers")
struct PublisherPathsTests {
    let id: UInt64 = 0xABCD

    func subscribe(_ topic: [UInt8]) -> [UInt8] { [1] + topic }
    func unsubscribe(_ topic: [UInt8]) -> [UInt8] { [0] + topic }

    @Test("a subscriber seen through two brokers counts once and stays while either still brings it")
    func subscriberCountedOncePerBus() throws {
        var machine = PublisherStateMachine(publisherID: id, paths: 2)
        let name = try NotificationName("ha.x")
        let pattern = try NamePattern("ha.x")
        let prefix = pattern.subscriptionPrefix
        let presence = ControlNames.presenceTopic(bus: 7, pattern: pattern)
        for path in 0..<2 {
            _ = machine.received(subscribe(prefix), path: path, wallClock: 0)
            _ = machine.received(subscribe(presence), path: path, wallClock: 0)
        }
        _ = machine.endOfRead()
        #expect(machine.subscriberCount(matching: name) == 1)
        // Broker 0 dies: libzmq reports its topics unsubscribed. Broker 1 still brings the subscriber.
        #expect(machine.received(unsubscribe(presence), path: 0, wallClock: 0).isEmpty)
        #expect(machine.received(unsubscribe(prefix), path: 0, wallClock: 0).isEmpty)
        _ = machine.endOfRead()
        #expect(machine.subscriberCount(matching: name) == 1)
        // Gone from both: gone.
        _ = machine.received(unsubscribe(presence), path: 1, wallClock: 0)
        let actions = machine.received(unsubscribe(prefix), path: 1, wallClock: 0) + machine.endOfRead()
        #expect(machine.subscriberCount(matching: name) == 0)
        #expect(actions.contains(.changeInterest([.init(prefix: prefix, subscribed: false)])))
    }

    @Test("a wait for subscribers counts one once it came through every broker, or 1 s after the first")
    func joinedThroughEveryPath() throws {
        let second: UInt64 = 1_000_000_000
        var machine = PublisherStateMachine(publisherID: id, paths: 2)
        let name = try NotificationName("ha.x")
        let pattern = try NamePattern("ha.x")
        let prefix = pattern.subscriptionPrefix
        // Bus 7 through broker 0 only: there, but not yet for a wait (broker 1 would drop the
        // first notifications: nothing subscribes there yet).
        _ = machine.received(subscribe(prefix), path: 0, wallClock: 0)
        _ = machine.received(subscribe(ControlNames.presenceTopic(bus: 7, pattern: pattern)), path: 0, wallClock: 0)
        _ = machine.endOfRead()
        #expect(machine.subscriberCount(matching: name) == 1)
        #expect(machine.subscriberCount(matching: name, joinedOnly: true) == 0)
        #expect(machine.nextJoinDeadline == second)
        #expect(machine.joinTick(wallClock: second - 1) == [])
        // Through broker 1 too: counted at once, and the waits look again.
        _ = machine.received(subscribe(prefix), path: 1, wallClock: second / 2)
        _ = machine.received(subscribe(ControlNames.presenceTopic(bus: 7, pattern: pattern)), path: 1, wallClock: second / 2)
        #expect(machine.endOfRead() == [.subscribersChanged])
        #expect(machine.subscriberCount(matching: name, joinedOnly: true) == 1)
        #expect(machine.nextJoinDeadline == nil)

        // Bus 8 through broker 1 only (connected to that one, or broker 0 slow to bring it):
        // counted 1 s later, when the tick tells the waits to look again.
        _ = machine.received(subscribe(ControlNames.presenceTopic(bus: 8, pattern: pattern)), path: 1, wallClock: 2 * second)
        _ = machine.endOfRead()
        #expect(machine.subscriberCount(matching: name, joinedOnly: true) == 1)
        #expect(machine.nextJoinDeadline == 3 * second)
        #expect(machine.joinTick(wallClock: 3 * second) == [.subscribersChanged])
        #expect(machine.subscriberCount(matching: name, joinedOnly: true) == 2)
        #expect(machine.nextJoinDeadline == nil && machine.joinTick(wallClock: 4 * second) == [])

        // Broker 0 dies: bus 7 stays counted through broker 1 (it joined; it is not joining again).
        _ = machine.received(unsubscribe(ControlNames.presenceTopic(bus: 7, pattern: pattern)), path: 0, wallClock: 5 * second)
        _ = machine.received(unsubscribe(prefix), path: 0, wallClock: 5 * second)
        _ = machine.endOfRead()
        #expect(machine.subscriberCount(matching: name, joinedOnly: true) == 2)
        #expect(machine.nextJoinDeadline == nil)

        // One path: nobody is ever joining.
        var single = PublisherStateMachine(publisherID: id)
        _ = single.received(subscribe(prefix), wallClock: 0)
        _ = single.received(subscribe(ControlNames.presenceTopic(bus: 7, pattern: pattern)), wallClock: 0)
        #expect(single.subscriberCount(matching: name, joinedOnly: true) == 1)
        #expect(single.nextJoinDeadline == nil)
    }

    @Test("a readiness token that reaches the publisher through both brokers is echoed once")
    func tokenEchoedOnce() {
        var machine = PublisherStateMachine(publisherID: id, paths: 2)
        let token = Array("_nbus.ready.0000000000000007.1".utf8) + [0]
        let first = machine.received(subscribe(token), path: 0, wallClock: 0)
        let second = machine.received(subscribe(token), path: 1, wallClock: 0)
        #expect(first.contains { if case .send = $0 { true } else { false } })
        #expect(second.isEmpty)
    }
}

@Suite("PublisherPathsStateMachine (socket-free, injected clock)")
struct PublisherPathsStateMachineTests {
    let ms: UInt64 = 1_000_000

    /// Two connected paths at 0: path 0 took all 10 frames, path 1 only 3 (refusing since 0).
    func pathOneStalled(limit: UInt64) -> PublisherPathsStateMachine {
        var machine = PublisherPathsStateMachine(paths: 2, limit: limit)
        #expect(machine.attempted(path: 0, cursor: 10, count: 10, now: 0, up: [true, true]) == .done)
        #expect(machine.attempted(path: 1, cursor: 3, count: 10, now: 0, up: [true, true]) == .wait)
        return machine
    }

    @Test("a path that takes nothing for the limit is given up on while another carries the stream; it is back once it takes everything")
    func stalledPathParked() {
        var machine = pathOneStalled(limit: 2_000 * ms)
        let up = [true, true]
        #expect(machine.attempted(path: 1, cursor: 3, count: 10, now: 1_999 * ms, up: up) == .wait)
        #expect(machine.attempted(path: 1, cursor: 3, count: 10, now: 2_000 * ms, up: up) == .drop(newly: true, stalledFor: 2_000 * ms))
        #expect(machine.done == 10)
        machine.restart()
        // Parked: what it refuses is dropped at once.
        #expect(machine.attempted(path: 0, cursor: 10, count: 10, now: 2_100 * ms, up: up) == .done)
        #expect(machine.attempted(path: 1, cursor: 0, count: 10, now: 2_100 * ms, up: up) == .drop(newly: false, stalledFor: 2_100 * ms))
        machine.restart()
        // It takes a whole round: back.
        #expect(machine.attempted(path: 1, cursor: 10, count: 10, now: 2_200 * ms, up: up) == .done)
        #expect(machine.paths[1].parked == false)
    }

    @Test("closing shortens the limit: a path stalled for the closing limit is given up on, one that moves is not, and the limit never grows")
    func closingLimit() {
        var machine = pathOneStalled(limit: 15_000 * ms)
        let up = [true, true]
        #expect(machine.attempted(path: 1, cursor: 3, count: 10, now: 400 * ms, up: up) == .wait)
        #expect(machine.parked.isEmpty)
        // The close begins: a quarter of a 2 s close timeout.
        machine.shortenLimit(to: 500 * ms)
        machine.shortenLimit(to: 60_000 * ms)
        #expect(machine.limit == 500 * ms)
        #expect(machine.attempted(path: 1, cursor: 3, count: 10, now: 499 * ms, up: up) == .wait)
        #expect(machine.attempted(path: 1, cursor: 3, count: 10, now: 500 * ms, up: up) == .drop(newly: true, stalledFor: 500 * ms))
        #expect(machine.parked == [1])
        // A path that still moves while closing is waited for, as before.
        var moving = PublisherPathsStateMachine(paths: 2, limit: 15_000 * ms)
        moving.shortenLimit(to: 500 * ms)
        _ = moving.attempted(path: 0, cursor: 100, count: 100, now: 0, up: up)
        for step in 1...10 {
            #expect(moving.attempted(path: 1, cursor: step * 5, count: 100, now: UInt64(step) * 400 * ms, up: up) == .wait)
        }
        #expect(moving.parked.isEmpty)
    }

    @Test("a path that moves, however slowly (flow control), is never given up on")
    func movingPathWaitedFor() {
        var machine = PublisherPathsStateMachine(paths: 2, limit: 2_000 * ms)
        let up = [true, true]
        _ = machine.attempted(path: 0, cursor: 100, count: 100, now: 0, up: up)
        for step in 1...10 {
            #expect(machine.attempted(path: 1, cursor: step * 5, count: 100, now: UInt64(step) * 1_000 * ms, up: up) == .wait)
        }
    }

    @Test("a path without a connection swallows sends: it never counts as carrying, so the other is waited for")
    func disconnectedPathDoesNotCarry() {
        var machine = PublisherPathsStateMachine(paths: 2, limit: 2_000 * ms)
        // Path 1's broker died: libzmq drops what it is sent (ZMQ_IMMEDIATE), so it takes all.
        let up = [true, false]
        #expect(machine.attempted(path: 1, cursor: 10, count: 10, now: 0, up: up) == .done)
        #expect(machine.attempted(path: 0, cursor: 4, count: 10, now: 0, up: up) == .wait)
        #expect(machine.attempted(path: 0, cursor: 4, count: 10, now: 5_000 * ms, up: up) == .wait)
    }

    @Test("both stalled: the first past the limit is given up on, never the last one carrying; a parked path whose partner went is waited for again")
    func neverTheLastPath() {
        var machine = PublisherPathsStateMachine(paths: 2, limit: 2_000 * ms)
        let up = [true, true]
        #expect(machine.attempted(path: 0, cursor: 0, count: 10, now: 0, up: up) == .wait)
        #expect(machine.attempted(path: 1, cursor: 0, count: 10, now: 1_000 * ms, up: up) == .wait)
        // Path 0 past the limit, path 1 stalled only 1 s: 1 still counts as carrying.
        #expect(machine.attempted(path: 0, cursor: 0, count: 10, now: 2_000 * ms, up: up) == .drop(newly: true, stalledFor: 2_000 * ms))
        // Path 1 past the limit too, but path 0 is parked: 1 is the last, waited for.
        #expect(machine.attempted(path: 1, cursor: 0, count: 10, now: 3_500 * ms, up: up) == .wait)
        machine.restart()
        // Path 1's connection goes: parked path 0 is the last one left, waited for again.
        #expect(machine.attempted(path: 0, cursor: 0, count: 10, now: 4_000 * ms, up: [true, false]) == .wait)
        #expect(machine.paths[0].parked == false)
    }
}

@Suite("PublisherPathsStateMachine: who the other paths bring")
struct PublisherPathsCoverageTests {
    @Test("a path is not given up on while another path that takes sends lacks its subscribers (a broker just restarted)")
    func notParkedWithoutCoverage() {
        var machine = PublisherPathsStateMachine(paths: 2, limit: 2_000_000_000)
        let up = [true, true]
        _ = machine.attempted(path: 1, cursor: 10, count: 10, now: 0, up: up)
        var covered = false
        #expect(machine.attempted(path: 0, cursor: 0, count: 10, now: 0, up: up, covered: { _, _ in covered }) == .wait)
        #expect(machine.attempted(path: 0, cursor: 0, count: 10, now: 3_000_000_000, up: up, covered: { _, _ in covered }) == .wait)
        covered = true
        #expect(
            machine.attempted(path: 0, cursor: 0, count: 10, now: 3_000_000_000, up: up, covered: { _, _ in covered })
                == .drop(newly: true, stalledFor: 3_000_000_000))
    }

    @Test("the publisher's view: a path covers another when it brings each of its subscribers")
    func coverageFromPresence() throws {
        var machine = PublisherStateMachine(publisherID: 1, paths: 2)
        let pattern = try NamePattern("c.x")
        for bus: UInt64 in [7, 8] {
            _ = machine.received([1] + ControlNames.presenceTopic(bus: bus, pattern: pattern), path: 0, wallClock: 0)
        }
        _ = machine.received([1] + ControlNames.presenceTopic(bus: 7, pattern: pattern), path: 1, wallClock: 0)
        #expect(!machine.subscribersCovered(path: 0, by: [1]))
        #expect(machine.subscribersCovered(path: 1, by: [0]))
        _ = machine.received([1] + ControlNames.presenceTopic(bus: 8, pattern: pattern), path: 1, wallClock: 0)
        #expect(machine.subscribersCovered(path: 0, by: [1]))
    }
}
