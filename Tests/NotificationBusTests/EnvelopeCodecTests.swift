import Testing
@testable import NBP1

@Suite("EnvelopeCodec against the NBP/1 vectors and round trips")
struct EnvelopeCodecTests {
    @Test("The vector files are present and large enough")
    func vectorsLoaded() throws {
        #expect(try ProtocolVector.load("valid.json").count >= 12)
        #expect(try ProtocolVector.load("invalid.json").count >= 12)
        let reasons = Set(ProtocolVector.invalid.compactMap(\.reason) + BatchVector.invalid.compactMap(\.reason))
        #expect(reasons == Set(RejectionReason.allCases.map(\.rawValue)), "every reason has a vector")
    }

    @Test("Every valid vector decodes to its listed fields", arguments: ProtocolVector.valid)
    func validVectorDecodes(vector: ProtocolVector) throws {
        let decoded = try #require(vector.decoded)
        let notification = try EnvelopeCodec.decode(
            frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
        #expect(notification.name.rawValue == decoded.name)
        #expect(Int(notification.flags) == decoded.flags)
        #expect(Int(notification.contentType.rawValue) == decoded.contentType)
        #expect(notification.sequence == UInt64(decoded.sequence))
        #expect(notification.publisherID == UInt64(decoded.publisherId))
        #expect(notification.timestamp == UInt64(decoded.timestamp))
        #expect(notification.headers.map { [$0.key, $0.value] } == decoded.headers)
        #expect(notification.payload == ProtocolVector.bytes(fromHex: decoded.payloadHex))
    }

    @Test("Canonical valid vectors re-encode byte for byte", arguments: ProtocolVector.valid.filter { $0.canonical == true })
    func canonicalVectorReencodes(vector: ProtocolVector) throws {
        let notification = try EnvelopeCodec.decode(
            frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
        #expect(try EnvelopeCodec.encode(notification) == vector.frameBytes[0])
    }

    @Test("Every invalid vector is rejected with its named reason", arguments: ProtocolVector.invalid)
    func invalidVectorRejected(vector: ProtocolVector) throws {
        let expected = try #require(vector.reason.flatMap(RejectionReason.init(rawValue:)))
        #expect(throws: expected) {
            _ = try EnvelopeCodec.decode(
                frames: vector.frameBytes, maximumPayload: vector.maxPayload ?? WireFormat.defaultMaximumPayload)
        }
    }

    @Test("Encode then decode returns the same notification")
    func roundTrip() throws {
        let original = BusNotification(
            name: NotificationName("orders.created.eu"),
            payload: Array(repeating: 0xAB, count: 256),
            headers: ["trace": "4bf92f3577b34da6", "tenant": "acme"],
            contentType: .json, sequence: 42, publisherID: 0xDEAD_BEEF_0123_4567,
            timestamp: 1_763_000_000_123_456_789)
        let frame = try EnvelopeCodec.encode(original)
        #expect(frame.count == (try EnvelopeCodec.encodedSize(of: original)))
        #expect(try EnvelopeCodec.decode(frame: frame) == original)

        var reused: [UInt8] = [9, 9]
        try EnvelopeCodec.encode(original, appendingTo: &reused)
        #expect(Array(reused.dropFirst(2)) == frame)
    }

    @Test("Encode refuses headers beyond NBP/1's limits")
    func encodeLimits() throws {
        let name = NotificationName("a")
        let many = NotificationHeaders((0..<33).map { ("k\($0)", "v") })
        #expect(throws: EncodeError.tooManyHeaders(count: 33)) {
            _ = try EnvelopeCodec.encode(BusNotification(name: name, headers: many))
        }
        #expect(throws: EncodeError.invalidHeaderKey("")) {
            _ = try EnvelopeCodec.encode(BusNotification(name: name, headers: ["": "v"]))
        }
        #expect(throws: EncodeError.invalidHeaderKey(String(repeating: "k", count: 65))) {
            _ = try EnvelopeCodec.encode(BusNotification(name: name, headers: [String(repeating: "k", count: 65): "v"]))
        }
        #expect(throws: EncodeError.headerValueTooLong(key: "k", byteCount: 1025)) {
            _ = try EnvelopeCodec.encode(BusNotification(name: name, headers: ["k": String(repeating: "v", count: 1025)]))
        }
        let big = NotificationHeaders((0..<5).map { ("k\($0)", String(repeating: "v", count: 1000)) })
        #expect(throws: EncodeError.headersTooLarge(byteCount: 5 * (3 + 2 + 1000))) {
            _ = try EnvelopeCodec.encode(BusNotification(name: name, headers: big))
        }
    }

    @Test("Decoding random and truncated bytes never traps and always names a reason")
    func decodeNeverTraps() throws {
        var generator = SplitMix64(seed: 0x5EED)
        let valid = try EnvelopeCodec.encode(
            BusNotification(name: NotificationName("x.y"), payload: [1, 2, 3], headers: ["a": "b"]))
        for length in 0...valid.count {
            _ = try? EnvelopeCodec.decode(frame: Array(valid.prefix(length)))
        }
        for _ in 0..<20_000 {
            var frame = valid
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                frame[Int(generator.next() % UInt64(frame.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            do { _ = try EnvelopeCodec.decode(frame: frame) } catch { #expect(RejectionReason.allCases.contains(error)) }
            let random = (0..<Int(generator.next() % 80)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            _ = try? EnvelopeCodec.decode(frame: random)
        }
    }
}

/// A small deterministic generator so failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("NotificationHeaders")
struct NotificationHeadersTests {
    @Test("Setting replaces in place, nil removes, order is kept")
    func editing() {
        var headers: NotificationHeaders = ["a": "1", "b": "2", "c": "3"]
        headers["b"] = "two"
        headers["a"] = nil
        headers["d"] = "4"
        #expect(headers.map { "\($0.key)=\($0.value)" } == ["b=two", "c=3", "d=4"])
        #expect(headers.count == 3 && headers["c"] == "3" && headers["a"] == nil)
    }

    @Test("Keys compare byte-wise, not by canonical equivalence")
    func byteWiseKeys() {
        var headers = NotificationHeaders()
        headers["\u{E9}"] = "composed"
        headers["e\u{301}"] = "decomposed"
        #expect(headers.count == 2)
        #expect(headers["\u{E9}"] == "composed" && headers["e\u{301}"] == "decomposed")
    }

    @Test("A key too long for the wire is reported by the encoder, not lost silently")
    func unrepresentableKey() throws {
        let key = String(repeating: "k", count: 300)
        var headers = NotificationHeaders()
        headers[key] = "v"
        #expect(throws: EncodeError.invalidHeaderKey(key)) {
            _ = try EnvelopeCodec.encode(BusNotification(name: NotificationName("a"), headers: headers))
        }
    }
}
