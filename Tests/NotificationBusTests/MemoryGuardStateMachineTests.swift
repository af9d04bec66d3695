import Testing

@testable import NotificationBus

// The memory guard shared by the broker and a binding bus, fed by hand (no sockets, no /proc):
// when it looks, when it only gives memory back, when it drops every connection, and its cooldown.
@Suite("MemoryGuardStateMachine (socket-free, injected clock and readings)")
struct MemoryGuardStateMachineTests {
    typealias Action = MemoryGuardStateMachine.Action
    static let ms: UInt64 = 1_000_000
    static let limit: UInt64 = 100

    /// One input and the action it must return.
    enum Input: CustomTestStringConvertible {
        case tick(UInt64)
        case reading(UInt64?, at: UInt64)
        var testDescription: String {
            switch self {
            case .tick(let now): "tick \(now / MemoryGuardStateMachineTests.ms) ms"
            case .reading(let bytes, let now): "reading \(bytes.map(String.init) ?? "nil") at \(now / MemoryGuardStateMachineTests.ms) ms"
            }
        }
    }

    /// A row: a name, then the inputs in order with the action each returns.
    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let steps: [(Input, Action)]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "within the limit: a look every interval, nothing done", steps: [
            (.tick(0), .measure), (.reading(limit, at: 0), .none),
            (.tick(24 * ms), .none),
            (.tick(25 * ms), .measure), (.reading(limit - 1, at: 25 * ms), .none),
        ]),
        Row(name: "over, and giving memory back is enough: no drop", steps: [
            (.tick(0), .measure), (.reading(limit + 1, at: 0), .releaseFreeMemoryAndMeasure),
            (.reading(limit, at: 0), .none),
            (.tick(25 * ms), .measure), (.reading(limit, at: 25 * ms), .none),
        ]),
        Row(name: "still over after giving memory back: every connection dropped, with the second reading", steps: [
            (.tick(0), .measure), (.reading(limit + 50, at: 0), .releaseFreeMemoryAndMeasure),
            (.reading(limit + 10, at: 0), .dropConnections(residentBytes: limit + 10)),
        ]),
        Row(name: "within the 100 ms cooldown of a drop: memory only given back; after it, a drop again", steps: [
            (.tick(0), .measure), (.reading(limit + 1, at: 0), .releaseFreeMemoryAndMeasure),
            (.reading(limit + 1, at: 0), .dropConnections(residentBytes: limit + 1)),
            (.tick(25 * ms), .measure), (.reading(limit + 1, at: 25 * ms), .releaseFreeMemory),
            (.tick(75 * ms), .measure), (.reading(limit + 1, at: 75 * ms), .releaseFreeMemory),
            (.tick(100 * ms), .measure), (.reading(limit + 1, at: 100 * ms), .releaseFreeMemoryAndMeasure),
            (.reading(limit + 1, at: 100 * ms), .dropConnections(residentBytes: limit + 1)),
        ]),
        Row(name: "an unreadable memory: nothing done on a guess, at either reading", steps: [
            (.tick(0), .measure), (.reading(nil, at: 0), .none),
            (.tick(25 * ms), .measure), (.reading(limit + 1, at: 25 * ms), .releaseFreeMemoryAndMeasure),
            (.reading(nil, at: 25 * ms), .none),
            (.tick(50 * ms), .measure), (.reading(limit + 1, at: 50 * ms), .releaseFreeMemoryAndMeasure),
            (.reading(limit + 1, at: 50 * ms), .dropConnections(residentBytes: limit + 1)),
        ]),
        Row(name: "a reading nobody asked for changes nothing", steps: [
            (.reading(limit + 1, at: 0), .none),
            (.tick(0), .measure), (.reading(limit, at: 0), .none),
            (.reading(limit + 1, at: 1 * ms), .none),
            (.tick(24 * ms), .none),
        ]),
        Row(name: "a late loop: the next look is one interval after the late one", steps: [
            (.tick(0), .measure), (.reading(limit, at: 0), .none),
            (.tick(1_000 * ms), .measure), (.reading(limit, at: 1_000 * ms), .none),
            (.tick(1_024 * ms), .none), (.tick(1_025 * ms), .measure),
        ]),
        Row(name: "times near the end of the clock saturate instead of wrapping", steps: [
            (.tick(.max - 1), .measure), (.reading(limit + 1, at: .max - 1), .releaseFreeMemoryAndMeasure),
            (.reading(limit + 1, at: .max - 1), .dropConnections(residentBytes: limit + 1)),
            (.tick(.max - 1), .none),
        ]),
    ]

    @Test("each input returns its action", arguments: rows)
    func table(_ row: Row) {
        var machine = MemoryGuardStateMachine(
            limitBytes: Self.limit, checkIntervalNanoseconds: 25 * Self.ms, cooldownNanoseconds: 100 * Self.ms)
        for (index, (input, expected)) in row.steps.enumerated() {
            let action =
                switch input {
                case .tick(let now): machine.tick(now: now)
                case .reading(let bytes, let now): machine.measured(residentBytes: bytes, now: now)
                }
            #expect(action == expected, "step \(index + 1): \(input.testDescription)")
        }
    }

    @Test("the defaults are MemoryGuardTiming's: a look every 25 ms, 100 ms between drops")
    func defaults() {
        let machine = MemoryGuardStateMachine(limitBytes: 1)
        #expect(machine.checkIntervalNanoseconds == MemoryGuardTiming.checkInterval)
        #expect(machine.cooldownNanoseconds == MemoryGuardTiming.cooldown)
    }

    /// `check` is the glue both loops run: what it reads and gives back, and what it returns.
    @Test("check: reads, gives memory back and asks for a drop as the machine says")
    func checkDrivesTheMachine() {
        var machine = MemoryGuardStateMachine(
            limitBytes: Self.limit, checkIntervalNanoseconds: 25 * Self.ms, cooldownNanoseconds: 100 * Self.ms)
        var readings: [UInt64?] = []
        var releases = 0
        func run(_ now: UInt64, _ values: [UInt64?]) -> UInt64? {
            readings = values.reversed()
            return machine.check(now: now, residentMemory: { readings.popLast() ?? nil }, releaseMemory: { releases += 1 })
        }
        // Within the limit: one reading, nothing given back.
        #expect(run(0, [Self.limit]) == nil)
        #expect(releases == 0 && readings.isEmpty)
        // Not yet time: nothing read.
        #expect(run(10 * Self.ms, [Self.limit + 1]) == nil)
        #expect(readings.count == 1)
        // Over twice: given back once, then a drop with the second reading.
        #expect(run(25 * Self.ms, [Self.limit + 5, Self.limit + 3]) == Self.limit + 3)
        #expect(releases == 1 && readings.isEmpty)
        // In the cooldown: given back, read once, no drop.
        #expect(run(50 * Self.ms, [Self.limit + 5, Self.limit + 3]) == nil)
        #expect(releases == 2 && readings.count == 1)
    }
}
