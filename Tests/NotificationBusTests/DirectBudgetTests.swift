import Foundation
import Testing
import TestSupport

@testable import NotificationBus

// A binding publisher (direct topology) keeps each subscriber's budget as the broker does: a
// subscriber persistently slower than the publisher, past its budget, throttles the publisher
// (flow control) and loses nothing: it is moving, so it is neither disconnected nor sent past.
@Suite("A binding publisher's subscriber budget: a slow but moving subscriber", .timeLimit(.minutes(3)))
struct DirectBudgetTests {
    @Test("a 50 us-per-notification handler past a 256 KiB budget loses nothing; the publisher waits for it, disconnects nobody")
    func slowHandlerThrottlesTheBindingPublisher() async throws {
        let endpoint = try temporaryIPCEndpoint("direct.sock")
        var configuration = BusConfiguration.directPublisher(bind: endpoint)
        // A mark of 682 frames: 30,000 notifications pass it many times over while the handler
        // (50 us each, 1.5 s in all) lags.
        //
        // Run alone (Makefile LOAD_TESTS), as BrokerBudgetTests: in the parallel phase, beside a
        // second suite's load, it once stopped at 27,908 of 30,000 (lost 0) for 120 s. Most
        // likely (not yet confirmed: a failure now prints the publisher's counters at the wait):
        // the consumer, a task on the cooperative pool, which 500 tests on two cores have left
        // unscheduled for over 10 s before, kept the subscriber past its budget that long; it was
        // then disconnected as slow (by design), the rest went out while it reconnected, and it
        // would learn the gap only at the next notification or the end of stream, after this wait.
        configuration.subscriberBudget = 256 << 10
        let publisher = try Bus(configuration)
        var subscriberConfiguration = BusConfiguration.directSubscriber(connect: [endpoint])
        // A small socket queue at the subscriber, so that its backlog reaches the publisher's mark:
        // 125 frames, 4 MiB of full 32 KiB batches (1,000 let the subscriber's libzmq queue take
        // the whole 7.7 MB stream once the default frame grew from 4 KiB: the budget was never
        // reached).
        subscriberConfiguration.receiveHighWaterMark = 125
        let subscriberBus = try Bus(subscriberConfiguration)
        let name: NotificationName = "slow.handler"
        let events = try subscriberBus.events(named: "slow.>", buffering: .suspendProducer(capacity: 256))
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(30))
        let published = 30_000
        // The handler: 50 us of work per notification, far slower than posting.
        let (consumer, progress) = startSlowHandler(events, perNotification: .microseconds(50))
        let payload = [UInt8](repeating: 1, count: 256)
        for _ in 0..<published { try await publisher.post(name: name, payload: payload) }
        // A lost tail would show only at the publisher's close: a bounded wait fails instead.
        let done = await progress.wait(timeout: .seconds(120)) { $0.received + Int($0.lost) >= published }
        consumer.cancel()
        let (received, lost) = progress.value
        // What the publisher had done by then says where the rest was (held, or sent to nobody).
        let statsAtTheWait = publisher.stats
        #expect(
            done && received == published && lost == 0,
            "received \(received), lost \(lost) of \(published); publisher then: \(statsAtTheWait); subscriber: \(subscriberBus.stats)")
        let stats = await publisher.close()
        // The scenario's precondition: the publisher did wait for the subscriber (flow control).
        withKnownIssue("a loaded machine can leave the budget unreached", isIntermittent: true) {
            #expect(stats.subscriberWaits > 0, "the publisher never waited: the budget was not reached")
        }
        #expect(
            stats.stalledSubscribersDisconnected == 0 && stats.slowSubscribersDisconnected == 0 && stats.slowSubscriberEpisodes == 0,
            "\(stats)")
        #expect(stats.sent == UInt64(published) && stats.unsent == 0, "\(stats)")
        _ = await subscriberBus.close()
    }
}
