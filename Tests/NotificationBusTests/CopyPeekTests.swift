import Testing
@testable import NotificationBus

/// The looks a receiver with several paths (NBP-1 §17) takes at a frame before deciding it is a
/// copy to discard undecoded: `peekBatchStart` (where a batch starts), `peekBatch` (a batch's
/// publisher, record count and sequence range, found by the decoder's own checks) and
/// `isAcceptable` (a version 1 frame passes the decoder's checks). A malformed frame must never
/// pass them: it goes on to the decoder, which rejects and counts it.
@Suite("Peeking at copies: a batch's span, a frame's acceptability, exactly as the decoder sees them")
struct CopyPeekTests {
    /// `frame`'s name length, when it has a valid name (what the receiver checks before peeking).
    private func nameLength(_ frame: [UInt8]) -> Int? {
        frame.withUnsafeBytes { try? EnvelopeCodec.nameLength(in: $0) }
    }

    private func peek(_ frame: [UInt8], maximumPayload: Int = WireFormat.defaultMaximumPayload) -> BatchPeek? {
        guard let nameLength = nameLength(frame) else { return nil }
        return frame.withUnsafeBytes {
            EnvelopeCodec.peekBatch($0, validatedNameLength: nameLength, maximumPayload: maximumPayload)
        }
    }

    private func acceptable(_ frame: [UInt8], maximumPayload: Int = WireFormat.defaultMaximumPayload) -> Bool {
        guard let nameLength = nameLength(frame) else { return false }
        return frame.withUnsafeBytes {
            EnvelopeCodec.isAcceptable($0, validatedNameLength: nameLength, maximumPayload: maximumPayload)
        }
    }

    /// What the decoder makes of a frame: its notifications, or nil when it rejects it.
    private func decoded(_ frame: [UInt8], maximumPayload: Int = WireFormat.defaultMaximumPayload) -> [BusNotification]? {
        try? EnvelopeCodec.decodeAll(frames: [frame], maximumPayload: maximumPayload)
    }

    /// `peek` agrees with the decoder on `frame`: nil exactly when it is rejected, otherwise the
    /// decoded notifications' publisher, count and lowest and highest sequence.
    private func expectPeekAgrees(_ frame: [UInt8], maximumPayload: Int = WireFormat.defaultMaximumPayload, _ what: String) {
        let isBatch = nameLength(frame).map { frame.count > $0 + 1 && frame[$0 + 1] == WireFormat.batchVersion } ?? false
        guard isBatch else { return }
        let notifications = decoded(frame, maximumPayload: maximumPayload)
        let peeked = peek(frame, maximumPayload: maximumPayload)
        guard let notifications, let first = notifications.first else {
            #expect(peeked == nil, "\(what): the decoder rejects it, the peek passed it: \(String(describing: peeked))")
            return
        }
        let sequences = notifications.map(\.sequence)
        #expect(
            peeked
                == BatchPeek(
                    publisherID: first.publisherID, recordCount: notifications.count,
                    lowestSequence: sequences.min() ?? 0, highestSequence: sequences.max() ?? 0), "\(what)")
    }

    @Test("A valid batch: its publisher, record count and sequence range; where it starts")
    func validBatch() throws {
        var notifications = try BatchCodecTests.notifications(5)
        for index in notifications.indices { notifications[index].sequence = 40 + UInt64(index) }
        let frame = try EnvelopeCodec.encodeBatch(notifications)
        #expect(peek(frame) == BatchPeek(publisherID: 0xFEED, recordCount: 5, lowestSequence: 40, highestSequence: 44))
        let start = frame.withUnsafeBytes { EnvelopeCodec.peekBatchStart($0, nameLength: "orders.created".utf8.count) }
        #expect(start?.publisherID == 0xFEED && start?.sequence == 40)
    }

    @Test("A foreign batch's records out of order: the lowest and highest, not the first and last")
    func recordsOutOfOrder() throws {
        var notifications = try BatchCodecTests.notifications(3)
        for (index, sequence) in [UInt64(9), 3, 7].enumerated() { notifications[index].sequence = sequence }
        let frame = try EnvelopeCodec.encodeBatch(notifications)
        #expect(peek(frame) == BatchPeek(publisherID: 0xFEED, recordCount: 3, lowestSequence: 3, highestSequence: 9))
    }

    @Test("A version 1 frame is no batch to peek, and where a batch starts is nil for it and for a cut header")
    func notABatch() throws {
        let single = try EnvelopeCodec.encode(BusNotification(name: NotificationName("a.b"), sequence: 4, publisherID: 7))
        #expect(peek(single) == nil)
        #expect(acceptable(single))
        single.withUnsafeBytes { #expect(EnvelopeCodec.peekBatchStart($0, nameLength: 3) == nil) }
        let batch = try EnvelopeCodec.encodeBatch(try BatchCodecTests.notifications(2))
        let nameLength = "orders.created".utf8.count
        // It reads the batch header and the first record's fixed part: a frame cut short of them is nil.
        let firstRecordEnd = nameLength + 1 + WireFormat.batchHeaderSize + WireFormat.batchRecordHeaderSize
        for length in 0..<firstRecordEnd {
            Array(batch.prefix(length)).withUnsafeBytes {
                #expect(EnvelopeCodec.peekBatchStart($0, nameLength: nameLength) == nil, "cut at \(length)")
            }
        }
    }

    @Test("Every invalid batch vector fails the peek; every valid one agrees with its decoding")
    func vectors() throws {
        for vector in BatchVector.invalid where vector.frameBytes.count == 1 {
            #expect(peek(vector.frameBytes[0], maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload) == nil, "\(vector.id)")
        }
        for vector in BatchVector.valid {
            expectPeekAgrees(vector.frameBytes[0], maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload, vector.id)
        }
        for vector in ProtocolVector.invalid where vector.frameBytes.count == 1 {
            #expect(!acceptable(vector.frameBytes[0], maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload), "\(vector.id)")
        }
        for vector in ProtocolVector.valid {
            #expect(acceptable(vector.frameBytes[0], maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload), "\(vector.id)")
        }
    }

    @Test("Every cut of a batch fails the peek; every single-byte change passes it exactly when the decoder accepts")
    func truncatedAndMalformedBatches() throws {
        let frame = try EnvelopeCodec.encodeBatch(try BatchCodecTests.notifications(3))
        #expect(peek(frame) != nil)
        for length in 0..<frame.count {
            #expect(peek(Array(frame.prefix(length))) == nil, "cut at \(length)")
        }
        // Bytes past the last record (B4), and a payload over this receiver's limit.
        #expect(peek(frame + [0]) == nil)
        #expect(peek(frame, maximumPayload: 7) == nil)
        for index in frame.indices {
            for flip: UInt8 in [0xFF, 0x01, 0x80] {
                var changed = frame
                changed[index] ^= flip
                expectPeekAgrees(changed, "byte \(index) ^ \(flip)")
            }
        }
    }

    @Test("Version 1: acceptable exactly when the decoder accepts, for every cut and single-byte change")
    func versionOneAcceptability() throws {
        let frame = try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName("a.b"), payload: [1, 2, 3], headers: ["k": "v", "trace": "x"], sequence: 4, publisherID: 7))
        #expect(acceptable(frame))
        #expect(!acceptable(frame, maximumPayload: 2))
        for length in 0..<frame.count {
            let cut = Array(frame.prefix(length))
            #expect(acceptable(cut) == (decoded(cut) != nil), "cut at \(length)")
        }
        for index in frame.indices {
            for flip: UInt8 in [0xFF, 0x01, 0x80] {
                var changed = frame
                changed[index] ^= flip
                guard nameLength(changed) != nil else { continue }
                #expect(acceptable(changed) == (decoded(changed) != nil), "byte \(index) ^ \(flip)")
            }
        }
    }
}
