import Testing

@testable import NotificationBus

// Issue 38, item 10: a subscriber of 20,000 patterns leaving cost its publisher n x n copies (each
// presence unsubscription copied the bus's whole pattern table before changing it: 36.8 s in one
// `nbus subscribe` run). The table now changes in place. Checked by what it keeps, not by time:
// every pattern counted in and out, the bus departs once, at its last pattern.
@Suite("A publisher's view of a subscriber with many patterns", .timeLimit(.minutes(1)))
struct ManyPresencePatternsTests {
    @Test("20,000 announced patterns of one bus, and one announced twice: each counted out, the bus departs once, at its last")
    func manyPatternsComeAndGo() throws {
        var view = PublisherView(publisherID: 1)
        let patterns = try (0..<20_000).map { try NamePattern("p\($0).x.>") }
        for pattern in patterns {
            view.apply(subscribe: true, topic: ArraySlice(ControlNames.presenceTopic(bus: 7, pattern: pattern)))
        }
        // A second subscription of the same pattern on that bus.
        view.apply(subscribe: true, topic: ArraySlice(ControlNames.presenceTopic(bus: 7, pattern: patterns[0])))
        #expect(view.presence[7]?.count == 20_000)
        #expect(view.presence[7]?[patterns[0]] == 2)
        #expect(view.arrivedBuses == [7])
        for pattern in patterns.reversed() {
            view.apply(subscribe: false, topic: ArraySlice(ControlNames.presenceTopic(bus: 7, pattern: pattern)))
        }
        // patterns[0] was announced twice: one left, the bus still present.
        #expect(view.presence[7] == [patterns[0]: 1])
        #expect(view.departedBuses.isEmpty)
        view.apply(subscribe: false, topic: ArraySlice(ControlNames.presenceTopic(bus: 7, pattern: patterns[0])))
        #expect(view.presence[7] == nil)
        #expect(view.departedBuses == [7])
        // One more of a bus that is gone changes nothing.
        view.apply(subscribe: false, topic: ArraySlice(ControlNames.presenceTopic(bus: 7, pattern: patterns[1])))
        #expect(view.presence.isEmpty && view.departedBuses == [7])
    }
}
