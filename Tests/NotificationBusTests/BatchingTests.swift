import Foundation
import Synchronization
import Testing
import ZeroMQ
@testable import NotificationBus
import TestSupport

@Suite("Batch frames between buses: merged at the publisher, counted as notifications, gaps exact")
struct BatchingTests {
    /// Posts `runs` of names in a tight loop (so the I/O thread finds several queued at once) and
    /// checks that a subscriber gets every one, in posting order, with nothing lost.
    func roundTrip(batching: Batching) async throws -> (publisher: BusStats, subscriber: BusStats) {
        let endpoint = try temporaryIPCEndpoint("batch.sock")
        var publisherConfiguration = BusConfiguration.directPublisher(bind: endpoint)
        publisherConfiguration.publisherBackpressure = true  // lossless, so "every one" is exact
        publisherConfiguration.batching = batching
        let publisher = try Bus(publisherConfiguration)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let stream = try subscriber.notifications(named: NamePattern("b.>"))
        let one = try NotificationName("b.one")
        let two = try NotificationName("b.two")
        try await publisher.waitForSubscribers(count: 1, matching: one, timeout: .seconds(20))
        // Runs of 3 of one name, then 2 of the other: order must hold across names too.
        var posted: [String] = []
        for index in 0..<4_000 {
            let name = index % 5 < 3 ? one : two
            let payload = Array("p\(index)".utf8)
            try await publisher.post(name: name, payload: payload, headers: index % 7 == 0 ? ["k": "\(index)"] : [:])
            posted.append("\(name.rawValue)/\(index)")
        }
        let total = posted.count
        let received = try await withTimeout(.seconds(30), "every notification") { () -> [String] in
            var received: [String] = []
            for await notification in stream {
                received.append("\(notification.name.rawValue)/\(String(decoding: notification.payload.dropFirst(), as: UTF8.self))")
                if received.count == total { break }
            }
            return received
        }
        let publisherStats = await publisher.close()
        let subscriberStats = await subscriber.close()
        #expect(received == posted, "lost, repeated or reordered")
        #expect(stream.stats.received == UInt64(total) && stream.stats.lostUpstream == 0)
        #expect(publisherStats.sent == UInt64(total) && publisherStats.unsent == 0)
        #expect(publisherStats.posted == UInt64(total))
        return (publisherStats, subscriberStats)
    }

    @Test("Batching on: consecutive posts of one name share frames; every notification arrives in order")
    func batchingOn() async throws {
        let (publisher, subscriber) = try await roundTrip(batching: .on)
        // Posted faster than one frame at a time can go: the I/O thread found runs to merge.
        #expect(publisher.framesSent < publisher.sent, "nothing was batched: \(publisher)")
        #expect(subscriber.framesReceived < 4_000)
    }

    @Test("Batching off: one frame per notification")
    func batchingOff() async throws {
        let (publisher, subscriber) = try await roundTrip(batching: .off)
        #expect(publisher.framesSent == publisher.sent)
        #expect(subscriber.framesReceived >= 4_000)
    }

    @Test("A raw producer's batches: gaps inside and between batches, a malformed batch counted with its notifications")
    func receiverAccounting() async throws {
        let endpoint = try temporaryIPCEndpoint("raw-batch.sock")
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let stream = try subscriber.notifications(named: NamePattern("f.*"))
        let name = try NotificationName("f.a")
        func batch(_ sequences: [UInt64], name batchName: NotificationName? = nil) throws -> [UInt8] {
            try EnvelopeCodec.encodeBatch(
                sequences.map {
                    BusNotification(
                        name: batchName ?? name, payload: [UInt8(truncatingIfNeeded: $0)],
                        sequence: $0, publisherID: 77, timestamp: $0)
                })
        }
        var malformed = try batch([10, 11, 12])
        malformed.append(0)  // a byte after the last record: batchInvalid, 3 notifications declared
        let frames: [[UInt8]] = [
            try batch([1, 2, 3]),
            try batch([5, 6]),  // 4 lost between batches
            try batch([7, 9]),  // 8 lost inside a batch
            try batch([1, 2], name: try NotificationName("f.b.c")),  // under the prefix, outside the pattern
            malformed,
            try EnvelopeCodec.encode(BusNotification(name: name, sequence: 13, publisherID: 77, timestamp: 13)),
        ]
        let context = try Context()
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let producer = Thread {
            defer { done.signal() }
            do {
                let raw = try context.socket(.xpub)
                try raw.set(.xpubNoDrop, true)
                try raw.set(.sendTimeout, .milliseconds(20_000))
                try raw.set(.receiveTimeout, .milliseconds(20_000))
                try raw.set(.linger, .milliseconds(5_000))
                try raw.bind(endpoint)
                try raw.awaitSubscription(Array("f.".utf8))
                for frame in frames { try raw.send(frame) }
                raw.close()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        producer.start()
        let sequences = try await withTimeout(.seconds(30), "the raw producer's notifications") { () -> [UInt64] in
            var sequences: [UInt64] = []
            for await notification in stream {
                sequences.append(notification.sequence)
                if notification.sequence == 13 { break }
            }
            return sequences
        }
        done.wait()
        #expect(failure.withLock { $0 } == nil)
        let stats = await subscriber.close()
        #expect(sequences == [1, 2, 3, 5, 6, 7, 9, 13])
        // 4, 8, and the malformed batch's 10...12 (never tracked, so the next frame shows them).
        #expect(stream.stats.lostUpstream == 5)
        #expect(stats.lostUpstream == 5)
        #expect(stats.rejected == [.batchInvalid: 1])
        #expect(stats.rejectedBatchNotifications == 3)
        #expect(stream.stats.filteredOut == 2)
        #expect(stats.framesReceived == 6)
    }

    @Test("Batches whose header declares 1,024 records but holds one count one, rejected or filtered out: a lie inflates no counter")
    func lyingCountInflatesNothing() async throws {
        let endpoint = try temporaryIPCEndpoint("lying-batch.sock")
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let stream = try subscriber.notifications(named: NamePattern("f.*"))
        /// A batch of one record whose header says 1,024.
        func lie(_ name: String, sequence: UInt64) throws -> [UInt8] {
            var frame = try EnvelopeCodec.encodeBatch([
                BusNotification(name: try NotificationName(name), payload: [1], sequence: sequence, publisherID: 78)
            ])
            let at = name.utf8.count + 1 + WireFormat.BatchHeaderOffset.recordCount
            frame[at] = UInt8(WireFormat.maximumBatchRecords >> 8)
            frame[at + 1] = UInt8(WireFormat.maximumBatchRecords & 0xFF)
            return frame
        }
        let rejectedCount = 500
        let filteredCount = 100
        let sample = try lie("f.a", sequence: 1)
        // What a broker counts for such a frame (its notifications_total): the bytes hold one.
        #expect(sample.withUnsafeBytes { EnvelopeCodec.notificationCount(inEncodedFrame: $0) } == 1)
        let frames: [[UInt8]] =
            try (1...rejectedCount).map { try lie("f.a", sequence: UInt64($0)) }
            + (1...filteredCount).map { try lie("f.b.c", sequence: UInt64($0)) }
            // Last, on the same connection: once it is here, every frame before it is.
            + [try EnvelopeCodec.encode(BusNotification(name: try NotificationName("f.end"), sequence: 1, publisherID: 77))]
        let context = try Context()
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let producer = Thread {
            defer { done.signal() }
            do {
                let raw = try context.socket(.xpub)
                try raw.set(.xpubNoDrop, true)
                try raw.set(.sendTimeout, .milliseconds(20_000))
                try raw.set(.receiveTimeout, .milliseconds(20_000))
                try raw.set(.linger, .milliseconds(5_000))
                try raw.bind(endpoint)
                try raw.awaitSubscription(Array("f.".utf8))
                for frame in frames { try raw.send(frame) }
                raw.close()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        producer.start()
        let names = try await withTimeout(.seconds(30), "the raw producer's last notification") { () -> [String] in
            var names: [String] = []
            for await notification in stream {
                names.append(notification.name.description)
                if notification.name.description == "f.end" { break }
            }
            return names
        }
        done.wait()
        #expect(failure.withLock { $0 } == nil)
        let stats = await subscriber.close()
        #expect(names == ["f.end"], "a lying batch delivered something")
        #expect(stats.rejected == [.truncatedHeader: UInt64(rejectedCount)])
        #expect(stats.rejectedBatchNotifications == UInt64(rejectedCount), "1,024 each was \(rejectedCount * 1_024)")
        #expect(stream.stats.filteredOut == UInt64(filteredCount))
        #expect(stats.notificationsReceived == UInt64(rejectedCount + filteredCount + 1))
        #expect(stats.framesReceived == UInt64(rejectedCount + filteredCount + 1))
    }
}
