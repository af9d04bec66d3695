import Foundation
import Testing
@testable import NotificationBus
import TestSupport

@Suite("A slow subscriber next to a fast one", .timeLimit(.minutes(1)))
struct SlowSubscriberTests {
    @Test("A stalled subscriber loses alone and counts it exactly; the publisher never waits for it; a fast one loses nothing")
    func stalledSubscriberLosesAloneAndCountsIt() async throws {
        let endpoint = try temporaryIPCEndpoint()
        var publisherConfiguration = BusConfiguration.directPublisher(bind: endpoint)
        publisherConfiguration.sendHighWaterMark = 100
        // close() re-sends the end-of-stream record until the stalled subscriber, released, acknowledges it.
        publisherConfiguration.closeTimeout = .seconds(30)
        let publisher = try Bus(publisherConfiguration)
        var slowConfiguration = BusConfiguration.directSubscriber(connect: [endpoint])
        slowConfiguration.receiveHighWaterMark = 100
        let slowBus = try Bus(slowConfiguration)
        let fastBus = try Bus(.directSubscriber(connect: [endpoint]))
        let pattern = NamePattern("feed.>")
        let slow = try slowBus.events(named: pattern, buffering: .suspendProducer(capacity: 16))
        let fast = try fastBus.events(named: pattern)
        let name = NotificationName("feed.prices")
        try await publisher.waitForSubscribers(count: 2, matching: name)

        // The slow consumer does not read at all until every notification is posted.
        let release = Gate()
        let slowConsumer = Task { () -> (received: [UInt64], gaps: [Gap]) in
            await release.wait()
            var received: [UInt64] = []
            var gaps: [Gap] = []
            for await event in slow {
                switch event {
                case .notification(let n): received.append(n.sequence)
                case .gap(let gap): gaps.append(gap)
                }
            }
            return (received, gaps)
        }

        // Posted in windows, each read in full by the fast consumer before the next: its queues
        // never hold more than one window (half the publisher's high-water mark), so whatever it
        // lost would be the bus's fault. The slow one's queues fill after a few hundred and stay full.
        let published: UInt64 = 20_000
        let window: UInt64 = 50
        let payload = [UInt8](repeating: 7, count: 1_000)
        var fastIterator = fast.makeAsyncIterator()
        var fastReceived: UInt64 = 0
        var fastGaps: [Gap] = []
        let clock = ContinuousClock()
        let start = clock.now
        for windowStart in stride(from: UInt64(1), through: published, by: Int(window)) {
            let windowEnd = min(published, windowStart + window - 1)
            for _ in windowStart...windowEnd { try await publisher.post(name: name, payload: payload) }
            while fastReceived < windowEnd {
                switch await fastIterator.next() {
                case .notification(let n)?:
                    fastReceived += 1
                    #expect(n.sequence == fastReceived)
                case .gap(let gap)?:
                    fastGaps.append(gap)
                    fastReceived += gap.count
                case nil:
                    Issue.record("the fast subscription ended early")
                    return
                }
            }
        }
        let postingTime = clock.now - start
        #expect(publisher.stats.sent == published, "every post went to ZeroMQ while the slow consumer read nothing")

        release.fire()
        let publisherStats = await publisher.close()
        await slowBus.close()
        await fastBus.close()
        let (slowReceived, slowGaps) = await slowConsumer.value(within: .seconds(30))

        #expect(fastGaps.isEmpty)
        #expect(fast.stats.received == published && fast.stats.lostUpstream == 0)
        #expect(publisherStats.sent == published && publisherStats.unsent == 0)
        #expect(publisherStats.endOfStreamUnacknowledged == 0)

        // The slow one: exactly published = received + lost, the gaps and the received sequences
        // partition 1...published, in order. What it received is bounded by its queues (HWMs,
        // buffer, socket buffers), not by what was published: the rest was dropped, not held.
        let lost = slowGaps.reduce(UInt64(0)) { $0 + $1.count }
        #expect(UInt64(slowReceived.count) + lost == published)
        #expect(slow.stats.lostUpstream == lost)
        #expect(slowReceived == slowReceived.sorted())
        #expect(slowReceived.count < Int(published) / 4, "received \(slowReceived.count) of \(published)")
        var covered = Set(slowReceived)
        for gap in slowGaps {
            let range = try #require(gap.sequences)
            #expect(gap.cause == .lostUpstream && UInt64(range.count) == gap.count)
            for sequence in range { #expect(covered.insert(sequence).inserted) }
        }
        #expect(covered == Set(1...published))
        print("slow subscriber: received \(slowReceived.count), lost \(lost) in \(slowGaps.count) gap(s); "
            + "fast subscriber: received \(fast.stats.received), lost 0; posting took \(postingTime)")
    }
}
