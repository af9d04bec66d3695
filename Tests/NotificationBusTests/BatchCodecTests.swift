import Testing
@testable import NBP1

@Suite("BatchCodec: batch frames against the vectors, round trips and limits")
struct BatchCodecTests {
    @Test("The batch vector files are present")
    func vectorsLoaded() throws {
        #expect(try BatchVector.load("batch-valid.json").count >= 5)
        #expect(try BatchVector.load("batch-invalid.json").count >= 15)
    }

    @Test("Every valid batch vector decodes to its listed notifications, in order", arguments: BatchVector.valid)
    func validBatchDecodes(vector: BatchVector) throws {
        let expected = try #require(vector.decoded)
        let notifications = try EnvelopeCodec.decodeAll(
            frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
        #expect(notifications.count == expected.count)
        for (notification, decoded) in zip(notifications, expected) {
            #expect(notification.name.rawValue == decoded.name)
            #expect(Int(notification.flags) == decoded.flags)
            #expect(Int(notification.contentType.rawValue) == decoded.contentType)
            #expect(notification.sequence == UInt64(decoded.sequence))
            #expect(notification.publisherID == UInt64(decoded.publisherId))
            #expect(notification.timestamp == UInt64(decoded.timestamp))
            #expect(notification.headers.map { [$0.key, $0.value] } == decoded.headers)
            #expect(notification.payload == ProtocolVector.bytes(fromHex: decoded.payloadHex))
        }
    }

    @Test("Canonical batch vectors re-encode byte for byte", arguments: BatchVector.valid.filter { $0.canonical == true })
    func canonicalBatchReencodes(vector: BatchVector) throws {
        let notifications = try EnvelopeCodec.decodeAll(
            frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
        #expect(try EnvelopeCodec.encodeBatch(notifications) == vector.frameBytes[0])
    }

    @Test("A decoder for version 1 alone counts a batch as unsupportedVersion", arguments: BatchVector.valid)
    func singleDecoderRefusesBatch(vector: BatchVector) {
        #expect(throws: RejectionReason.unsupportedVersion) { _ = try EnvelopeCodec.decode(frames: vector.frameBytes) }
    }

    @Test("Every invalid batch vector is rejected with its reason and its declared count", arguments: BatchVector.invalid)
    func invalidBatchRejected(vector: BatchVector) throws {
        let expected = try #require(vector.reason.flatMap(RejectionReason.init(rawValue:)))
        #expect(throws: expected) {
            _ = try EnvelopeCodec.decodeAll(
                frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
        }
        guard vector.frameBytes.count == 1 else { return }
        let frame = vector.frameBytes[0]
        let declared = frame.withUnsafeBytes { bytes -> Int? in
            guard let nameLength = try? EnvelopeCodec.nameLength(in: bytes) else { return nil }
            return EnvelopeCodec.declaredRecordCount(in: bytes, nameLength: nameLength)
        }
        #expect(declared == vector.records)
    }

    @Test("Version 1 vectors decode the same through decodeAll")
    func versionOneThroughDecodeAll() throws {
        for vector in ProtocolVector.valid {
            let maximum = vector.maxPayload ?? WireFormat.defaultMaximumPayload
            #expect(
                try EnvelopeCodec.decodeAll(frames: vector.frameBytes, maximumPayload: maximum)
                    == [try EnvelopeCodec.decode(frames: vector.frameBytes, maximumPayload: maximum)])
        }
        for vector in ProtocolVector.invalid {
            let expected = try #require(vector.reason.flatMap(RejectionReason.init(rawValue:)))
            #expect(throws: expected, "\(vector.id)") {
                _ = try EnvelopeCodec.decodeAll(
                    frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
            }
        }
    }

    static func notifications(_ count: Int, name: String = "orders.created", payload: Int = 8) throws -> [BusNotification] {
        let name = try NotificationName(name)
        var out: [BusNotification] = []
        for index in 0..<count {
            let bytes: [UInt8] = Array(repeating: UInt8(truncatingIfNeeded: index), count: payload)
            var headers = NotificationHeaders()
            if index % 2 == 0 { headers = ["trace": "t\(index)"] }
            let contentType: ContentType = index % 3 == 0 ? .json : .text
            let timestamp: UInt64 = 1_700_000_000_000_000_000 + UInt64(index)
            out.append(
                BusNotification(
                    name: name, payload: bytes, headers: headers, contentType: contentType,
                    sequence: UInt64(index + 1), publisherID: 0xFEED, timestamp: timestamp))
        }
        return out
    }

    @Test("Encode then decode returns the same notifications; the size is what writeBatch is told")
    func roundTrip() throws {
        let originals = try Self.notifications(5)
        let frame = try EnvelopeCodec.encodeBatch(originals)
        #expect(try EnvelopeCodec.decodeAll(frames: [frame]) == originals)
        let nameLength = "orders.created".utf8.count
        let sizes = try originals.map { try EnvelopeCodec.encodedSize(of: $0) }
        let expectedSize = sizes.reduce(nameLength + 1 + WireFormat.batchHeaderSize) {
            $0 + EnvelopeCodec.batchedRecordSize(ofFrameCount: $1, nameLength: nameLength)
        }
        #expect(frame.count == expectedSize)
        frame.withUnsafeBytes { bytes in
            #expect(EnvelopeCodec.notificationCount(inEncodedFrame: bytes) == 5)
            #expect(EnvelopeCodec.declaredRecordCount(in: bytes, nameLength: nameLength) == 5)
        }
        try EnvelopeCodec.encode(originals[0]).withUnsafeBytes { bytes in
            #expect(EnvelopeCodec.notificationCount(inEncodedFrame: bytes) == 1)
        }
    }

    @Test("1024 records is the limit on both sides")
    func recordLimit() throws {
        let most = try Self.notifications(1024, payload: 0)
        #expect(try EnvelopeCodec.decodeAll(frames: [try EnvelopeCodec.encodeBatch(most)]).count == 1024)
        #expect(throws: EncodeError.batchRecordCount(1025)) {
            _ = try EnvelopeCodec.encodeBatch(try Self.notifications(1025, payload: 0))
        }
        #expect(throws: EncodeError.batchRecordCount(0)) { _ = try EnvelopeCodec.encodeBatch([]) }
    }

    @Test("A batch is one stream: mixed names or publishers are refused")
    func mixedStreamsRefused() throws {
        var other = try Self.notifications(2)
        other[1].name = try NotificationName("orders.deleted")
        #expect(throws: EncodeError.batchMixesStreams) { _ = try EnvelopeCodec.encodeBatch(other) }
        var publishers = try Self.notifications(2)
        publishers[1].publisherID = 1
        #expect(throws: EncodeError.batchMixesStreams) { _ = try EnvelopeCodec.encodeBatch(publishers) }
    }

    /// A well-formed batch frame named a.b of exactly `length` bytes, no record's payload over
    /// `maximumPayload`; built by hand, since encodeBatch refuses frames over the producers' bound.
    static func batchFrame(ofLength length: Int, maximumPayload: Int) -> [UInt8] {
        var records: [[UInt8]] = []
        var left = length - 4 - WireFormat.batchHeaderSize
        while left > 0 {
            let payload = min(maximumPayload, left - WireFormat.batchRecordHeaderSize)
            var record: [UInt8] = [0, 0, 0, 0, 0, 0]
            record += withUnsafeBytes(of: UInt32(payload).bigEndian, Array.init)
            record += withUnsafeBytes(of: UInt64(records.count + 1).bigEndian, Array.init)
            record += [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0x78, count: payload)
            records.append(record)
            left -= record.count
        }
        var frame = Array("a.b".utf8) + [0, WireFormat.batchVersion, 0, 3, 0]
        frame += withUnsafeBytes(of: UInt16(records.count).bigEndian, Array.init) + [0, 0]
        frame += withUnsafeBytes(of: UInt64(7).bigEndian, Array.init)
        return frame + records.joined()
    }

    @Test("A batch frame over 4384 + max(maxPayload, 1 MiB) bytes is payloadTooLarge (B4); the producers' bound is accepted")
    func batchFrameBound() throws {
        #expect(WireFormat.maximumBatchFrame == 4384 + 1_048_576)
        #expect(WireFormat.batchFrameLimit(maximumPayload: 16) == WireFormat.maximumBatchFrame)
        #expect(WireFormat.batchFrameLimit(maximumPayload: 2 << 20) == 4384 + (2 << 20))
        for maximumPayload in [WireFormat.defaultMaximumPayload, 4_000] {
            let atBound = Self.batchFrame(ofLength: WireFormat.maximumBatchFrame, maximumPayload: maximumPayload)
            #expect(atBound.count == WireFormat.maximumBatchFrame)
            #expect(try !EnvelopeCodec.decodeAll(frames: [atBound], maximumPayload: maximumPayload).isEmpty)
            let over = Self.batchFrame(ofLength: WireFormat.maximumBatchFrame + 1, maximumPayload: maximumPayload)
            #expect(throws: RejectionReason.payloadTooLarge) {
                _ = try EnvelopeCodec.decodeAll(frames: [over], maximumPayload: maximumPayload)
            }
            // The copy check accepts exactly what the decode accepts.
            over.withUnsafeBytes { bytes in
                #expect(EnvelopeCodec.peekBatch(bytes, validatedNameLength: 3, maximumPayload: maximumPayload) == nil)
            }
        }
        // A receiver configured for larger payloads accepts larger batches.
        let over = Self.batchFrame(ofLength: WireFormat.maximumBatchFrame + 1, maximumPayload: WireFormat.defaultMaximumPayload)
        #expect(try EnvelopeCodec.decodeAll(frames: [over], maximumPayload: 2 << 20).count == 2)
    }

    @Test("encodeBatch refuses what a producer must not send: control names, frames over the bound")
    func encoderKeepsProducerRules() throws {
        let endOfStream = BusNotification(
            name: try NotificationName(ControlNames.endOfStreamName(publisher: 0xFEED)), sequence: 1, publisherID: 0xFEED,
            timestamp: 1)
        #expect(throws: EncodeError.batchOfControlName(endOfStream.name.rawValue)) {
            _ = try EnvelopeCodec.encodeBatch([endOfStream])
        }
        let large = try Self.notifications(2, payload: 600_000)
        #expect(throws: EncodeError.self) { _ = try EnvelopeCodec.encodeBatch(large) }
        #expect(try EnvelopeCodec.decodeAll(frames: [try EnvelopeCodec.encodeBatch([large[0]])]).count == 1)
    }

    @Test("The payload limit applies per record")
    func payloadLimitPerRecord() throws {
        let frame = try EnvelopeCodec.encodeBatch(try Self.notifications(4, payload: 16))
        #expect(try EnvelopeCodec.decodeAll(frames: [frame], maximumPayload: 16).count == 4)
        #expect(throws: RejectionReason.payloadTooLarge) {
            _ = try EnvelopeCodec.decodeAll(frames: [frame], maximumPayload: 15)
        }
    }

    @Test("Every cut of a batch, and every single-byte change, is rejected or decoded, never a crash")
    func truncationsAndFlipsNeverTrap() throws {
        let frame = try EnvelopeCodec.encodeBatch(try Self.notifications(3))
        for length in 0..<frame.count {
            #expect(throws: RejectionReason.self) { _ = try EnvelopeCodec.decodeAll(frames: [Array(frame.prefix(length))]) }
        }
        for index in frame.indices {
            var changed = frame
            changed[index] ^= 0xFF
            do {
                let decoded = try EnvelopeCodec.decodeAll(frames: [changed])
                #expect(decoded.count <= 3)
            } catch {
                #expect(RejectionReason.allCases.contains(error))
            }
        }
    }
}
