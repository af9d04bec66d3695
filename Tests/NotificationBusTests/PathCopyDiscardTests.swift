import NBP1
import Testing
import ZeroMQ

@testable import NotificationBus

/// A subscriber with two paths (brokers, NBP-1 §17) discards the later copy of each notification
/// before decoding it, single frames and batch frames alike: counted per notification, never a
/// malformed frame taken for a copy, and a path whose copies are all discarded still counts as
/// able to fill the other path's holes. Frames are fed by hand with an injected clock (no sockets).
@Suite("Copies discarded undecoded over two paths: counted, checked, and the path still counts")
struct PathCopyDiscardTests {
    let core: BusCore
    var receiver: BusReceiver
    let storage: SubscriptionStorage
    let name = "copy.a"

    /// `pattern`: exact (the frame's prefix vouches for its name) or a wildcard.
    init(pattern: String = "copy.a") throws {
        core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        receiver = BusReceiver(maximumPayload: 1_024, maximumTrackedStreams: 100, paths: 2, gapTimeout: .seconds(2))
        storage = SubscriptionStorage(id: 1, pattern: try NamePattern(pattern), policy: .default, core: core)
        receiver.add(storage)
    }

    func notification(_ sequence: UInt64) throws -> BusNotification {
        BusNotification(name: try NotificationName(name), payload: [UInt8(truncatingIfNeeded: sequence)], sequence: sequence, publisherID: 3)
    }

    func single(_ sequence: UInt64) throws -> [UInt8] { try EnvelopeCodec.encode(notification(sequence)) }

    func batch(_ sequences: ClosedRange<UInt64>) throws -> [UInt8] {
        try EnvelopeCodec.encodeBatch(sequences.map(notification))
    }

    mutating func feed(_ frame: [UInt8], path: Int, now: UInt64 = 0) {
        frame.withUnsafeBytes { receiver.receive($0, path: path, now: now) }
    }

    /// What the receiver delivered to the subscription since the last call: the sequences, in
    /// order (then handed over, so the next call starts afresh).
    mutating func delivered() -> [UInt64] {
        var events = receiver.routes[0].batch.events
        receiver.flush()
        var sequences: [UInt64] = []
        while let event = events.popFirst() {
            if case .notification(let notification) = event { sequences.append(notification.sequence) }
        }
        return sequences
    }

    @Test("A batch both paths bring: delivered once, the copy discarded and counted per notification")
    mutating func batchCopyDiscarded() throws {
        feed(try batch(1...5), path: 0)
        feed(try batch(1...5), path: 1)
        #expect(delivered() == [1, 2, 3, 4, 5])
        #expect(receiver.counters.duplicatesDiscarded == 5)
        #expect(receiver.counters.rejected.isEmpty)
        feed(try batch(6...9), path: 1)
        feed(try batch(6...9), path: 0)
        #expect(delivered() == [6, 7, 8, 9])
        #expect(receiver.counters.duplicatesDiscarded == 9)
    }

    @Test("A batch past a hole is held, not handed on ahead of it; the other path's batch fills the hole, in order")
    mutating func batchPastAHole() throws {
        feed(try batch(1...5), path: 0)
        feed(try batch(1...5), path: 1)
        feed(try batch(7...9), path: 0)  // path 0 lost 6
        #expect(delivered() == [1, 2, 3, 4, 5])
        feed(try batch(6...9), path: 1)
        #expect(delivered() == [6, 7, 8, 9])
        #expect(receiver.counters.duplicatesDiscarded == 5 + 3)
        #expect(receiver.counters.lostUpstream == 0)
        feed(try batch(10...12), path: 1)
        feed(try batch(10...12), path: 0)
        #expect(delivered() == [10, 11, 12])
    }

    @Test("A batch that overlaps what came: the new part delivered, the rest counted as copies", arguments: ["copy.a", "copy.>"])
    func partialOverlap(pattern: String) throws {
        var test = try PathCopyDiscardTests(pattern: pattern)
        test.feed(try test.batch(1...5), path: 0)
        test.feed(try test.batch(3...8), path: 1)
        test.feed(try test.single(8), path: 0)
        test.feed(try test.single(9), path: 0)
        #expect(test.delivered() == Array(1...9))
        #expect(test.receiver.counters.duplicatesDiscarded == 4)
        #expect(test.receiver.counters.lostUpstream == 0)
    }

    @Test(
        "A malformed copy is rejected and counted under its reason, never discarded as a duplicate",
        arguments: ["trailing byte", "cut short", "record count 0", "name length", "payload too large"])
    func malformedCopyRejected(fault: String) throws {
        var test = try PathCopyDiscardTests()
        let good = try test.batch(1...3)
        test.feed(good, path: 0)
        let nameLength = test.name.utf8.count
        var bad = good
        let reason: RejectionReason
        switch fault {
        case "trailing byte":
            bad.append(0)
            reason = .batchInvalid
        case "cut short":
            bad.removeLast(1)
            reason = .truncatedHeader
        case "record count 0":
            bad[nameLength + 1 + WireFormat.BatchHeaderOffset.recordCount + 1] = 0
            reason = .batchInvalid
        case "name length":
            bad[nameLength + 1 + WireFormat.BatchHeaderOffset.nameLength] &+= 1
            reason = .nameLengthMismatch
        default:
            // The first record's payload declared over this receiver's 1,024 bytes.
            let offset = nameLength + 1 + WireFormat.batchHeaderSize + WireFormat.BatchRecordOffset.payloadLength
            bad[offset + 1] = 0x10
            reason = .payloadTooLarge
        }
        test.feed(bad, path: 1)
        #expect(test.receiver.counters.rejected[reason] == 1, "\(test.receiver.counters.rejected)")
        #expect(test.receiver.counters.duplicatesDiscarded == 0)
        #expect(test.delivered() == [1, 2, 3])
        // The same fault in a single frame's copy: rejected too.
        var singleBad = try test.single(2)
        singleBad[nameLength + 1 + WireFormat.FixedHeaderOffset.nameLength] &+= 1
        test.feed(singleBad, path: 1)
        #expect(test.receiver.counters.rejected[.nameLengthMismatch, default: 0] >= 1)
        #expect(test.receiver.counters.duplicatesDiscarded == 0)
        test.feed(try test.single(2), path: 1)
        #expect(test.receiver.counters.duplicatesDiscarded == 1)
    }

    @Test(
        "A path whose copies were all discarded still fills the other path's hole; no loss is declared",
        arguments: [false, true])
    func discardedPathStillCarries(batches: Bool) throws {
        var test = try PathCopyDiscardTests()
        let first = batches ? [try test.batch(1...10)] : try (1...10).map(test.single)
        for frame in first { test.feed(frame, path: 0) }
        for frame in first { test.feed(frame, path: 1) }
        #expect(test.receiver.counters.duplicatesDiscarded == 10)
        // Path 0 lost 11 (its broker dropped it): 12 is held, path 1 can still bring 11.
        test.feed(try test.single(12), path: 0, now: 1_000)
        #expect(test.delivered() == Array(1...10))
        #expect(test.receiver.counters.lostUpstream == 0)
        test.feed(try test.single(11), path: 1, now: 2_000)
        #expect(test.delivered() == [11, 12])
        #expect(test.receiver.counters.lostUpstream == 0)
    }

    @Test("A hole both paths passed is a gap, declared once; a discarded copy past it counts as passing it")
    mutating func holeNoPathCanFill() throws {
        for sequence: UInt64 in 1...3 {
            feed(try single(sequence), path: 0)
            feed(try single(sequence), path: 1)
        }
        feed(try single(5), path: 0)
        feed(try single(5), path: 1)  // a copy of a held one: discarded, and path 1 has passed 4
        #expect(receiver.counters.duplicatesDiscarded == 4)
        feed(try single(6), path: 0)
        #expect(delivered() == [1, 2, 3, 5, 6])
        #expect(receiver.counters.lostUpstream == 1)
    }
}
