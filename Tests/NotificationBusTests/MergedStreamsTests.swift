import Testing

@testable import NotificationBus

// The table of streams a subscriber with several brokers merges, fed by hand (no sockets, the
// clock a number): the invariants MergedStreams keeps between the table, the waiting streams
// (whose deadlines the loop sleeps on) and the ended ones.
@Suite("MergedStreams (socket-free, injected clock)")
struct MergedStreamsTests {
    let timeout: UInt64 = 2_000_000_000
    let both: UInt64 = 0b11

    func key(_ publisher: UInt64, _ name: String) throws -> MergedStreams.Key {
        MergedStreams.Key(publisherID: publisher, name: try NotificationName(name))
    }

    /// Feeds one notification of `key`; what became of it, as text (`d:n`, `held`, `dup`, `steps`).
    func feed(
        _ table: inout MergedStreams, _ key: MergedStreams.Key, _ sequence: UInt64, path: Int, now: UInt64 = 0,
        heard: UInt64 = 0
    ) throws -> String {
        let notification = try BusNotification(name: key.name, sequence: sequence, publisherID: key.publisherID)
        switch table.received(notification, key: key, path: path, now: now, connected: both, heard: heard).disposition {
        case .deliver(let delivered): return "d:\(delivered.sequence)"
        case .held: return "held"
        case .duplicate: return "dup"
        case .steps(let steps): return "steps:\(steps.count)"
        }
    }

    @Test("A hole makes its stream waiting (its deadline counts); settling at the deadline declares the gap and ends the wait")
    func waitingFollowsTheMerge() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        let orders = try key(7, "orders.created")
        #expect(try feed(&table, orders, 1, path: 0) == "steps:1", "sequence 1 starts the stream at once")
        #expect(try feed(&table, orders, 1, path: 1) == "dup")
        #expect(table.nextDeadline == nil)
        #expect(try feed(&table, orders, 2, path: 0) == "d:2")
        #expect(try feed(&table, orders, 5, path: 0, now: 10) == "held")
        #expect(table.nextDeadline == 10 + timeout)
        #expect(table.settle(now: 10 + timeout - 1, connected: both, all: false).isEmpty, "not yet")
        let settled = table.settle(now: 10 + timeout, connected: both, all: false)
        #expect(settled.map(\.key) == [orders])
        #expect(settled.first?.steps.count == 2, "the gap 3-4, then 5")
        #expect(table.nextDeadline == nil)
        #expect(table.tracked == 1)
        #expect(try feed(&table, orders, 3, path: 1) == "dup", "a late copy of what was declared lost")
    }

    @Test("A start that waits on a path read as down asks for a reading; one taken after the arrival starts it")
    func startAwaitsPathReading() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        table.pathsReadAt = 4
        let late = try key(7, "prices.eur")
        let nine = try BusNotification(name: late.name, sequence: 9, publisherID: 7)
        // Path 0 read as down at 4; 9 arrives on path 1 at 5: held, and a reading is wanted.
        guard case .held = table.received(nine, key: late, path: 1, now: 5, connected: 0b10, heard: 1).disposition else {
            Issue.record("9 was not held")
            return
        }
        #expect(table.startAwaitsPathReading)
        // A reading at 6 says path 0 is still down: the stream starts at 9, nothing waits.
        table.pathsReadAt = 6
        #expect(!table.startAwaitsPathReading)
        let settled = table.settle(now: 6, connected: 0b10, all: true)
        #expect(settled.map(\.key) == [late] && settled.first?.steps.count == 1)
        #expect(table.nextDeadline == nil)
        #expect((table.streamsJoinedLate, table.notificationsBeforeJoining) == (1, 8))
        // Without monitors (`.max`, the mask always current) no reading is ever wanted.
        var current = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        _ = current.received(nine, key: late, path: 1, now: 5, connected: 0b11, heard: 1)
        #expect(!current.startAwaitsPathReading)
    }

    @Test("A stream joined late is counted once when its merged start settles, as one path counts it; one from 1 is not")
    func joinedLateIsCounted() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        let late = try key(7, "prices.eur")
        #expect(try feed(&table, late, 5, path: 0) == "held", "the start waits for the other path")
        #expect((table.streamsJoinedLate, table.notificationsBeforeJoining) == (0, 0))
        #expect(try feed(&table, late, 4, path: 1) == "steps:2", "every path brought some: it starts at 4")
        #expect((table.streamsJoinedLate, table.notificationsBeforeJoining) == (1, 3))
        #expect(try feed(&table, late, 6, path: 0) == "d:6")
        #expect(try feed(&table, late, 5, path: 1) == "dup")
        let fromOne = try key(8, "prices.usd")
        #expect(try feed(&table, fromOne, 1, path: 0) == "steps:1")
        // Settled by the clock: a stream heard on one path only starts after the start wait.
        let alone = try key(9, "prices.gbp")
        #expect(try feed(&table, alone, 10, path: 0, now: 0) == "held")
        _ = table.settle(now: 2_000_000_000, connected: both, all: false)
        #expect((table.streamsJoinedLate, table.notificationsBeforeJoining) == (2, 12))
    }

    @Test("An ended stream no longer counts as tracked, and is forgotten once no path can bring more")
    func endedStreams() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        let orders = try key(7, "orders.created")
        _ = try feed(&table, orders, 1, path: 0)
        _ = try feed(&table, orders, 1, path: 1)
        #expect(table.endOfStream(try key(8, "orders.created"), last: 4, path: 0, now: 0, connected: both).isEmpty,
            "a stream not tracked settles nothing")
        _ = table.endOfStream(orders, last: 1, path: 0, now: 0, connected: both)
        #expect(table.tracked == 0, "its tail is known")
        // The other path goes down: nothing more can come, the stream is forgotten.
        _ = table.settle(now: 1, connected: 0b01, all: true)
        #expect(table.tracked == 0)
        #expect(try feed(&table, orders, 9, path: 0) == "held", "a new stream starts afresh")
    }

    @Test("A burst and its end of stream on one path before the other brought any: the other's copies, single or batched, are duplicates, and its record forgets the stream")
    func endedBeforeTheOtherPathBroughtAny() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        let burst = try key(7, "ha.x")
        for sequence: UInt64 in 1...5 { _ = try feed(&table, burst, sequence, path: 0) }
        let settled = table.endOfStream(burst, last: 5, path: 0, now: 0, connected: both)
        #expect(settled.isEmpty)
        #expect(table.tracked == 0, "its tail is known")
        // Path 1's copies come after the record: a batch frame of 1...4 (checked undecoded), then 5 alone.
        #expect(table.isDuplicate(burst, sequence: 1))
        let discarded = table.discardCopy(burst, lowest: 1, highest: 4, path: 1, heard: 1)
        #expect(discarded)
        #expect(try feed(&table, burst, 5, path: 1, now: 1) == "dup")
        _ = table.endOfStream(burst, last: 5, path: 1, now: 1, connected: both)
        // Both paths are through: forgotten (a new stream of that key would start afresh).
        #expect(!table.isDuplicate(burst, sequence: 1))
    }

    @Test("A full table forgets the ended streams no path can bring more of before any live one, uncounted")
    func fullTableForgetsFinishedFirst() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 3, gapTimeout: timeout)
        let ended = try key(1, "a.ended")
        _ = try feed(&table, ended, 1, path: 0)
        _ = table.endOfStream(ended, last: 1, path: 0, now: 0, connected: both)
        _ = try feed(&table, try key(1, "a.one"), 1, path: 0, heard: 1)
        _ = try feed(&table, try key(1, "a.two"), 1, path: 0, heard: 2)
        // The ended stream still waits for path 1 (it brought nothing of it) until the gap timeout.
        let early = BusNotification(name: NotificationName("a.three"), sequence: 1, publisherID: 1)
        let first = table.received(early, key: try key(1, "a.three"), path: 0, now: 1, connected: both, heard: 3)
        #expect(first.forgotten == 1, "the stalest (the ended one, heard first) made room, counted")
        // Past the gap timeout the full table forgets an ended stream first, not counted.
        let late = BusNotification(name: NotificationName("a.four"), sequence: 1, publisherID: 1)
        _ = table.endOfStream(try key(1, "a.one"), last: 1, path: 0, now: 2, connected: both)
        let second = table.received(late, key: try key(1, "a.four"), path: 0, now: 2 + timeout, connected: both, heard: 4)
        #expect(second.forgotten == 0)
        #expect(try feed(&table, try key(1, "a.two"), 1, path: 1) == "dup", "the live streams are all still known")
        #expect(try feed(&table, try key(1, "a.three"), 1, path: 1) == "dup")
    }

    @Test("A full table forgets its least recently heard tenth (at least one) to make room, and says how many")
    func forgetsStalest() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 3, gapTimeout: timeout)
        for (index, name) in ["a.one", "a.two", "a.three"].enumerated() {
            // From sequence 2: each start waits for the other path (held, with a deadline).
            #expect(try feed(&table, try key(1, name), 2, path: 0, heard: UInt64(index)) == "held")
        }
        #expect(table.tracked == 3)
        #expect(table.nextDeadline != nil)
        let notification = try BusNotification(name: try NotificationName("a.four"), sequence: 1, publisherID: 1)
        let result = table.received(notification, key: try key(1, "a.four"), path: 0, now: 0, connected: both, heard: 9)
        #expect(result.forgotten == 1)
        #expect(table.tracked == 3)
        #expect(table.nextDeadline != nil, "the two held starts left still wait")
        // The forgotten stream (the stalest, a.one) starts afresh; the others are still known.
        #expect(try feed(&table, try key(1, "a.two"), 2, path: 1) == "dup")
        #expect(try feed(&table, try key(1, "a.one"), 2, path: 1, heard: 10) != "dup")
    }

    @Test("Streams no remaining subscription matches are forgotten with their waits")
    func forgetUnmatched() throws {
        var table = MergedStreams(paths: 2, maximumTracked: 100, gapTimeout: timeout)
        _ = try feed(&table, try key(1, "orders.created"), 1, path: 0)
        _ = try feed(&table, try key(1, "users.created"), 1, path: 0)
        #expect(table.tracked == 2)
        let users = try NamePattern("users.>")
        table.forgetStreams { !users.matches($0.name) }
        #expect(table.tracked == 1)
        table.forgetStreams { _ in true }
        #expect(table.tracked == 0)
        #expect(table.nextDeadline == nil, "no wait outlives its stream")
    }
}
