import Foundation
import Testing
@testable import NotificationBus
import TestSupport

// The loop lends its XPUB while it sleeps (`PublisherLendingStateMachine`): a sparse post is sent
// by the posting thread itself. A post reads the clock for that only while the socket may be
// lent (`BusCore.publisherLent`); these check that the hint follows the loop.
@Suite("Direct sends of sparse posts (the lent XPUB)", .timeLimit(.minutes(1)))
struct DirectSendTests {
    @Test("Sparse posts, each after the last one arrived: sent by the posting thread, every one delivered")
    func sparsePostsGoDirectly() async throws {
        let endpoint = try temporaryIPCEndpoint()
        let publisher = try Bus(.directPublisher(bind: endpoint))
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let name = NotificationName("sparse.x")
        let stream = try subscriber.notifications(named: NamePattern("sparse.x"))
        try await publisher.waitForSubscribers(count: 1, matching: name)
        var iterator = stream.makeAsyncIterator()
        let total = 20
        var received: [UInt64] = []
        for _ in 0..<total {
            // Each post waits for the one before it to arrive, so the loop has gone back to
            // sleep (and lent the socket) by the time most posts are made.
            try await publisher.post(name: name, payload: [1, 2, 3])
            guard let notification = await iterator.next() else { break }
            received.append(notification.sequence)
        }
        #expect(received == Array(1...UInt64(total)))
        let direct = publisher.core.mailbox.withLock { $0.lending.sent }
        #expect(direct > 0, "no post was sent directly: the lent socket was never used")
        #expect(publisher.stats.sent == UInt64(total))
        _ = await publisher.close()
        _ = await subscriber.close()
        // Closed, the loop took the socket for good: no post may read the clock for it.
        let lent = publisher.core.publisherLent.load(ordering: .relaxed)
        #expect(!lent)
    }
}
