import Testing
import ZeroMQ
@testable import NotificationBus

/// A subscriber's read round is bounded in notifications, not only in frames and bytes: what a
/// round takes lands in a `suspendProducer` subscription at once, and reading then stops until its
/// consumer has taken the buffer back to half, so the longer the round, the longer the socket goes
/// unread. With 32 KiB batch frames a 4 MiB round took up to 14,918 notifications of 256 B, and a
/// broker took the subscriber, moving at 23k/s, for a stalled one (docs/benchmarks/send-side.md).
@Suite("A read round takes at most 1,024 notifications, however they are batched")
struct ReadRoundNotificationLimitTests {
    @Test("Large batch frames: a round stops at the frame that reaches 1,024 notifications, and every one is read in later rounds")
    func roundBoundedInNotifications() throws {
        let context = try Context()
        let endpoint = "inproc://read-round-\(UInt64.random(in: 1...UInt64.max))"
        let sender = try context.socket(.pair)
        try sender.bind(endpoint)
        let reader = try context.socket(.pair)
        try reader.connect(endpoint)
        // 40 frames of 100 notifications of 256 B (about 29 KB each, 1.2 MB in all): within a
        // round's 1,024 frames and 4 MiB, so only the notification bound can end it early.
        let frames = 40
        let perFrame = 100
        let name: NotificationName = "s.data"
        var sequence: UInt64 = 0
        for _ in 0..<frames {
            let batch = (0..<perFrame).map { _ -> BusNotification in
                sequence += 1
                return BusNotification(name: name, payload: [UInt8](repeating: 0x44, count: 256), sequence: sequence, publisherID: 7)
            }
            try sender.send(try EnvelopeCodec.encodeBatch(batch))
        }
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .default, core: core))

        // inproc: every frame sent is in the reader's queue already.
        let first = try receiver.read(from: reader, limit: 1_024)
        #expect(first == (BusReceiver.roundNotificationLimit + perFrame - 1) / perFrame, "frames in the first round: \(first)")
        #expect(receiver.counters.notificationsReceived <= UInt64(BusReceiver.roundNotificationLimit + perFrame))
        receiver.flush()

        // The rest comes in the next rounds; nothing is lost or counted twice.
        var rounds = 1
        var read = first
        while read < frames && rounds < 100 {
            let count = try receiver.read(from: reader, limit: 1_024)
            #expect(count > 0 && count <= 11)
            read += count
            rounds += 1
            receiver.flush()
        }
        #expect(read == frames)
        #expect(receiver.counters.notificationsReceived == UInt64(frames * perFrame))
        #expect(receiver.counters.lostUpstream == 0)
    }

    @Test("One frame of more notifications than the bound is still read whole, alone")
    func largeFrameAlone() throws {
        let context = try Context()
        let endpoint = "inproc://read-round-large-\(UInt64.random(in: 1...UInt64.max))"
        let sender = try context.socket(.pair)
        try sender.bind(endpoint)
        let reader = try context.socket(.pair)
        try reader.connect(endpoint)
        let name: NotificationName = "s.data"
        for frame in 0..<2 {
            let batch = (1...1_024).map {
                BusNotification(name: name, payload: [1], sequence: UInt64(frame * 1_024 + $0), publisherID: 7)
            }
            try sender.send(try EnvelopeCodec.encodeBatch(batch))
        }
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024)
        receiver.add(SubscriptionStorage(id: 1, pattern: NamePattern("s.>"), policy: .default, core: core))
        #expect(try receiver.read(from: reader, limit: 1_024) == 1)
        #expect(receiver.counters.notificationsReceived == 1_024)
        receiver.flush()
        #expect(try receiver.read(from: reader, limit: 1_024) == 1)
        #expect(receiver.counters.notificationsReceived == 2_048)
    }
}
