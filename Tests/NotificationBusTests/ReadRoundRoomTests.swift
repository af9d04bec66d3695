import Testing
import ZeroMQ
@testable import NotificationBus

/// A subscriber's read round takes no more than the room its fullest `suspendProducer`
/// subscription has left (at least one frame): what a round reads lands in the buffers at once,
/// and reading then stops until the consumer has made room, so whatever a round took past the
/// capacity was socket left unread for the consumer to work through first. With 32 KiB batch
/// frames a round took up to 14,918 notifications into a buffer of 8,192, and a broker took the
/// subscriber, still moving, for a stalled one (issue 41, docs/benchmarks/send-side.md).
@Suite("A read round takes at most the room left in the subscriptions", .timeLimit(.minutes(1)))
struct ReadRoundRoomTests {
    /// A PAIR socket holding `frames` batch frames of `perFrame` notifications of 256 B (inproc:
    /// every frame sent is in the reader's queue at once).
    private func queued(frames: Int, perFrame: Int, context: Context) throws -> Socket {
        let endpoint = "inproc://read-room-\(UInt64.random(in: 1...UInt64.max))"
        let sender = try context.socket(.pair)
        try sender.bind(endpoint)
        let reader = try context.socket(.pair)
        try reader.connect(endpoint)
        let name: NotificationName = "s.data"
        var sequence: UInt64 = 0
        for _ in 0..<frames {
            let batch = (0..<perFrame).map { _ -> BusNotification in
                sequence += 1
                return BusNotification(name: name, payload: [UInt8](repeating: 0x44, count: 256), sequence: sequence, publisherID: 7)
            }
            try sender.send(try EnvelopeCodec.encodeBatch(batch))
        }
        return reader
    }

    @Test("Rounds fill a buffer of 1,000 to its capacity and past it by one frame at most; nothing is lost")
    func roundsStopAtTheRoom() async throws {
        let context = try Context()
        // 40 frames of 100 (about 29 KB each, 1.2 MB): within a round's 1,024 frames and 4 MiB,
        // so only the room can end a round early (unbounded, the first round read all 40).
        let frames = 40
        let perFrame = 100
        let capacity = 1_000
        let reader = try queued(frames: frames, perFrame: perFrame, context: context)
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        let storage = SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .suspendProducer(capacity: capacity), core: core)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(storage)

        #expect(try receiver.read(from: reader, limit: 1_024) == 10, "the first round stops at the frame that fills the capacity")
        let paused = receiver.flush()
        #expect(paused, "full: reading pauses")
        #expect(receiver.readingPaused && storage.stats.buffered == 1_000)

        var read = 10
        var delivered = 0
        var rounds = 1
        var local = EventQueue()
        while delivered < frames * perFrame && rounds < 200 {
            // The consumer takes a batch (at most 256): reading resumes at the subscription's
            // resume point, and the next round takes only what fits.
            local.removeAll()
            if await storage.refill(&local) { delivered += local.notificationCount }
            receiver.resumeReadingUnlessFull()
            guard !receiver.readingPaused, read < frames else { continue }
            let count = try receiver.read(from: reader, limit: 1_024)
            #expect(count >= 1)
            read += count
            rounds += 1
            receiver.flush()
            #expect(storage.stats.buffered <= UInt64(capacity + perFrame - 1), "past the capacity by more than a frame")
        }
        #expect(read == frames && delivered == frames * perFrame)
        #expect(receiver.counters.notificationsReceived == UInt64(frames * perFrame))
        #expect(receiver.counters.lostUpstream == 0)
    }

    @Test("A frame of more notifications than the room is still read, alone")
    func largeFrameAlone() throws {
        let context = try Context()
        let reader = try queued(frames: 3, perFrame: 600, context: context)
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        let storage = SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .suspendProducer(capacity: 1_000), core: core)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(storage)
        // Room 1,000: the second frame reaches it and is the last.
        #expect(try receiver.read(from: reader, limit: 1_024) == 2)
        let paused = receiver.flush()
        #expect(paused && storage.stats.buffered == 1_200)
    }

    @Test("Without a suspendProducer subscription a round is bounded as before, by frames and bytes")
    func dropPoliciesDoNotBound() throws {
        let context = try Context()
        let reader = try queued(frames: 40, perFrame: 100, context: context)
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .dropOldest(capacity: 1_000), core: core))
        #expect(try receiver.read(from: reader, limit: 1_024) == 40)
    }
}
