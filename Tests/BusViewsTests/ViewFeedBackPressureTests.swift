import Testing
@testable import BusViews
import NotificationBus

@Suite("Task feed back-pressure")
struct ViewFeedBackPressureTests {
    private func notification(_ sequence: UInt64) throws -> BusEvent {
        .notification(BusNotification(name: NotificationName("f.n"), sequence: sequence, publisherID: 1, timestamp: 1))
    }

    @Test("A retained value that arrives before the view first shows is kept for it, whatever the replay policy")
    func retainedValueBeforeFirstShowIsKept() throws {
        var feed = ViewFeedStateMachine(replay: .none, capacity: 8)
        let name = try NotificationName("price.eur")
        func value(_ sequence: UInt64, retained: Bool) -> BusEvent {
            .notification(BusNotification(
                name: name, sequence: sequence, publisherID: 1, timestamp: 1,
                flags: retained ? WireFormat.Flag.retainedCopy : 0))
        }
        // Hidden (the task has not run yet): the snapshot's value, a newer one for the same name,
        // and a live one, which `.none` counts as missed.
        _ = feed.receive(value(1, retained: true))
        _ = feed.receive(value(2, retained: true))
        _ = feed.receive(value(3, retained: false))
        let session = feed.activate()
        // Two events are expected, the gap and the kept value; `next` takes a continuation only to
        // park a consumer on an empty queue, so a placeholder that is never resumed will do.
        let placeholder = unsafeBitCast(0 as Int, to: UnsafeContinuation<BusEvent?, Never>.self)
        var taken: [BusEvent] = []
        for _ in 0..<2 {
            guard case .event(let event, _, _) = feed.next(session: session, placeholder) else { break }
            taken.append(event)
        }
        let sequences = taken.compactMap { event -> UInt64? in
            if case .notification(let notification) = event { return notification.sequence }
            return nil
        }
        #expect(sequences == [2], "\(taken)")
        let gaps = taken.compactMap { event -> UInt64? in
            if case .gap(let gap) = event { return gap.count }
            return nil
        }
        #expect(gaps == [2], "the superseded value and the live one are missed: \(taken)")
    }

    @Test("Replayed notifications put in front on reappear do not count against the bound on what the bus delivers")
    func replaysDoNotFillTheBound() throws {
        var feed = ViewFeedStateMachine(replay: .all(max: 10), capacity: 2)
        for sequence in UInt64(1)...5 { _ = feed.receive(try notification(sequence)) }  // hidden: kept
        _ = feed.activate()
        let fullWithReplaysOnly = feed.isFullForProducer()
        #expect(!fullWithReplaysOnly)  // five replays queued, none from the bus yet
        _ = feed.receive(try notification(6))
        let fullWithOne = feed.isFullForProducer()
        #expect(!fullWithOne)
        _ = feed.receive(try notification(7))
        let fullWithTwo = feed.isFullForProducer()
        #expect(fullWithTwo)  // two from the bus: the bound
    }
}
