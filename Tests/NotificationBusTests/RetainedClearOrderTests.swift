import TestSupport
import Testing
@testable import NotificationBus

// An embedded bus keeps its own posts' retained values. A subscription made after `clearRetained`
// (or after a newer retained post) returned starts from the state that post left: the post is
// applied to the bus's values before the subscription's snapshot is taken, even when the event
// loop takes both in one round. Real bus (inproc loopback), every wait bounded.

@Suite("An embedded bus: a subscription made after a clear or an update starts from it", .serialized, .timeLimit(.minutes(1)))
struct RetainedClearOrderTests {
    /// Rounds per test: the post and the subscription reach the loop in one round in most of them
    /// (the subscription follows the post by less than the loop's wake-up).
    static let rounds = 200

    /// Runs `body` `rounds` times on one embedded bus, each time on a name of its own that has
    /// the retained value [1] already (a subscription of every name, `all`, saw it: the loop keeps
    /// it); returns what the rounds reported wrong, each with its number.
    private func eachRound(
        _ prefix: String, _ body: (Bus, NotificationName, BusEventSequence) async throws -> String?
    ) async throws -> [String] {
        let bus = try Bus(.embedded())
        let all = try bus.events(named: try NamePattern("\(prefix).>"))
        var wrong: [String] = []
        for round in 0..<Self.rounds {
            let name = try NotificationName("\(prefix).n\(round)")
            try await bus.post(name: name, payload: [1], retain: true)
            _ = await all.first(1)
            if let problem = try await body(bus, name, all) { wrong.append("\(round): \(problem)") }
        }
        _ = await bus.close()
        return wrong
    }

    @Test("a subscription made right after clearRetained never gets the cleared value")
    func subscriptionAfterClear() async throws {
        let wrong = try await eachRound("clr") { bus, name, all in
            try await bus.clearRetained(name: name)
            let state = try bus.currentState(named: NamePattern(exactly: name))
            let got = await state.collect { _ in false }
            _ = await all.first(1)  // the clear, live
            let stale = got.contains { if case .notification(let n) = $0 { n.payload == [1] } else { false } }
            return stale ? "got the cleared value" : nil
        }
        #expect(wrong.isEmpty, "\(wrong)")
    }

    @Test("a subscription made right after a newer retained post starts from that post, then nothing twice")
    func subscriptionAfterUpdate() async throws {
        let wrong = try await eachRound("upd") { bus, name, all in
            try await bus.post(name: name, payload: [2], retain: true)
            let events = try bus.events(named: NamePattern(exactly: name), retained: true)
            try await bus.ready(NamePattern(exactly: name))
            try await bus.post(name: name, payload: [3])  // live: the end marker
            let got = await events.collect { event in
                if case .notification(let n) = event { return n.payload == [3] }
                return false
            }
            _ = await all.first(2)
            let payloads = got.compactMap { event -> String? in
                if case .notification(let n) = event { return "\(n.payload)\(n.isRetained ? "r" : "")" }
                return nil
            }
            return payloads == ["[2]r", "[3]"] ? nil : "\(payloads)"
        }
        #expect(wrong.isEmpty, "\(wrong)")
    }
}
