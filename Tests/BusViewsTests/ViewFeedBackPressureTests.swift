import Testing
@testable import BusViews
import NotificationBus

@Suite("Task feed back-pressure")
struct ViewFeedBackPressureTests {
    private func notification(_ sequence: UInt64) throws -> BusEvent {
        .notification(BusNotification(name: NotificationName("f.n"), sequence: sequence, publisherID: 1, timestamp: 1))
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
