// libFuzzer target for the NBP/1 decoders (EnvelopeCodec.decode and, for batch frames too,
// EnvelopeCodec.decodeAll). Not a SwiftPM target: the
// Makefile compiles it with `swiftc -sanitize=fuzzer,address -parse-as-library` together with the
// NBP1 module's source files (see `make fuzz`), so it runs the exact code the bus runs.
//
// Each input is one received frame. Beyond "never crashes, never reads out of bounds" (ASan),
// every input is checked against three oracles:
//  1. A second, deliberately plain decoder written here from NBP-1.md section 7 (a port of
//     protocol/python/nbp.py, using the standard library's own UTF-8 validation): both must
//     accept the same frames and give the same reject reason, for two payload limits.
//  2. Accepted frames re-encode byte for byte (with the `reserved` byte zeroed: the decoder
//     drops it, as receivers must ignore it).
//  3. Decoded headers iterate back to the exact wire bytes, and look-ups find every key.
//  4. decodeAll (every frame a receiver reads: one notification or a batch, NBP-1 §2.3, §7.5)
//     against the reference's batch decoder: the same notifications or the same reason, the
//     declared count the same as the reference's, and an accepted batch re-encodes byte for byte
//     (reserved fields zeroed). On a version 1 frame decodeAll agrees with decode.
//  5. The peeks a receiver with several paths uses to discard a copy undecoded (NBP-1 §17):
//     `peekBatch` and `isAcceptable` pass exactly the frames decodeAll accepts, and peekBatch's
//     publisher, count and sequence range are the decoded ones, so a malformed frame is never
//     discarded as a duplicate.
// Any failure traps, so libFuzzer saves the input as a crash artifact.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let frame = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    for limit in [WireFormat.defaultMaximumPayload, 16] {
        check(frame, maximumPayload: limit)
        checkAll(frame, maximumPayload: limit)
    }
    return 0
}

private func checkAll(_ frame: [UInt8], maximumPayload: Int) {
    let expected = Reference.decodeAll(frame, maximumPayload: maximumPayload)
    let actual: Result<[BusNotification], RejectionReason> = frame.withUnsafeBytes { bytes in
        Result { () throws(RejectionReason) in try EnvelopeCodec.decodeAll(bytes, maximumPayload: maximumPayload) }
    }
    checkPeeks(frame, maximumPayload: maximumPayload, decoded: try? actual.get())
    switch (actual, expected) {
    case (.failure(let reason), .failure(let want)):
        guard reason.rawValue == want.reason else {
            fatalError("decodeAll: reason \(reason.rawValue), reference says \(want.reason), frame \(hex(frame))")
        }
        let declared = frame.withUnsafeBytes { bytes -> Int? in
            guard let nameLength = try? EnvelopeCodec.nameLength(in: bytes) else { return nil }
            return EnvelopeCodec.declaredRecordCount(in: bytes, nameLength: nameLength)
        }
        guard declared == want.records else {
            fatalError("declared count \(String(describing: declared)), reference \(String(describing: want.records)): \(hex(frame))")
        }
    case (.success(let notifications), .success(let want)):
        guard notifications.count == want.count else { fatalError("decodeAll: \(notifications.count) notifications, reference \(want.count)") }
        for (notification, reference) in zip(notifications, want) { compare(notification, reference, frame) }
        let isBatch = frame.firstIndex(of: 0).map { $0 + 1 < frame.count && frame[$0 + 1] == WireFormat.batchVersion } ?? false
        if isBatch { roundTripBatch(notifications, frame) } else { roundTrip(notifications[0], frame) }
    case (.success, .failure(let want)):
        fatalError("decodeAll accepted, reference rejects with \(want.reason): \(hex(frame))")
    case (.failure(let reason), .success):
        fatalError("decodeAll rejected with \(reason.rawValue), reference accepts: \(hex(frame))")
    }
}

/// Oracle 5: the copy peeks agree with decodeAll (`decoded`: its notifications, nil if it rejected).
private func checkPeeks(_ frame: [UInt8], maximumPayload: Int, decoded: [BusNotification]?) {
    frame.withUnsafeBytes { bytes in
        guard let nameLength = try? EnvelopeCodec.nameLength(in: bytes), nameLength + 1 < bytes.count else { return }
        if bytes[nameLength + 1] == WireFormat.batchVersion {
            let peeked = EnvelopeCodec.peekBatch(bytes, validatedNameLength: nameLength, maximumPayload: maximumPayload)
            guard let decoded, let first = decoded.first else {
                guard peeked == nil else { fatalError("peekBatch passed a batch decodeAll rejects: \(hex(frame))") }
                return
            }
            let sequences = decoded.map(\.sequence)
            let want = BatchPeek(
                publisherID: first.publisherID, recordCount: decoded.count, lowestSequence: sequences.min() ?? 0,
                highestSequence: sequences.max() ?? 0)
            guard peeked == want else { fatalError("peekBatch \(String(describing: peeked)), decoded \(want): \(hex(frame))") }
        } else {
            let acceptable = EnvelopeCodec.isAcceptable(bytes, validatedNameLength: nameLength, maximumPayload: maximumPayload)
            guard acceptable == (decoded != nil) else {
                fatalError("isAcceptable \(acceptable), decodeAll \(decoded != nil ? "accepts" : "rejects"): \(hex(frame))")
            }
        }
    }
}

/// An accepted batch re-encodes to the frame with its reserved fields zeroed (receivers ignore them).
private func roundTripBatch(_ notifications: [BusNotification], _ frame: [UInt8]) {
    var canonical = frame
    let start = notifications[0].name.rawValue.utf8.count + 1
    canonical[start + WireFormat.BatchHeaderOffset.flags] = 0
    canonical[start + WireFormat.BatchHeaderOffset.reserved] = 0
    canonical[start + WireFormat.BatchHeaderOffset.reserved2] = 0
    canonical[start + WireFormat.BatchHeaderOffset.reserved2 + 1] = 0
    var position = start + WireFormat.batchHeaderSize
    for notification in notifications {
        canonical[position + WireFormat.BatchRecordOffset.reserved] = 0
        position += WireFormat.batchRecordHeaderSize + notification.headers.wire.count + notification.payload.count
    }
    let encoded: [UInt8]
    do {
        encoded = try EnvelopeCodec.encodeBatch(notifications)
    } catch {
        fatalError("a decoded batch does not re-encode (\(error)): \(hex(frame))")
    }
    guard encoded == canonical else { fatalError("batch re-encoding differs: \(hex(frame)) -> \(hex(encoded))") }
}

private func check(_ frame: [UInt8], maximumPayload: Int) {
    let expected = Reference.decode(frame, maximumPayload: maximumPayload)
    let actual: Result<BusNotification, RejectionReason> = frame.withUnsafeBytes { bytes in
        Result { () throws(RejectionReason) in try EnvelopeCodec.decode(bytes, maximumPayload: maximumPayload) }
    }
    switch (actual, expected) {
    case (.failure(let reason), .failure(let want)):
        guard reason.rawValue == want.reason else {
            fatalError("reason \(reason.rawValue), reference says \(want.reason), frame \(hex(frame))")
        }
        // The whole-message entry point agrees, and a second frame is always wrongFrameCount.
        let viaFrames = Result { () throws(RejectionReason) in
            try EnvelopeCodec.decode(frames: [frame], maximumPayload: maximumPayload)
        }
        guard case .failure(reason) = viaFrames else { fatalError("decode(frames:) disagrees: \(hex(frame))") }
        let twoFrames = Result { () throws(RejectionReason) in try EnvelopeCodec.decode(frames: [frame, []]) }
        guard case .failure(.wrongFrameCount) = twoFrames else { fatalError("two frames not wrongFrameCount") }
    case (.success(let notification), .success(let want)):
        compare(notification, want, frame)
        roundTrip(notification, frame)
    case (.success, .failure(let want)):
        fatalError("accepted, reference rejects with \(want.reason): \(hex(frame))")
    case (.failure(let reason), .success):
        fatalError("rejected with \(reason.rawValue), reference accepts: \(hex(frame))")
    }
}

private func compare(_ n: BusNotification, _ want: Reference.Decoded, _ frame: [UInt8]) {
    let headers = n.headers.map { (Array($0.key.utf8), Array($0.value.utf8)) }
    guard Array(n.name.rawValue.utf8) == want.name,
        n.payload == want.payload,
        headers.count == want.headers.count, n.headers.count == want.headers.count,
        zip(headers, want.headers).allSatisfy({ $0.0 == $1.0 && $0.1 == $1.1 }),
        n.contentType.rawValue == want.contentType, n.flags == want.flags,
        n.sequence == want.sequence, n.publisherID == want.publisherID, n.timestamp == want.timestamp
    else { fatalError("decoded fields differ from the reference: \(hex(frame))") }
    for (key, value) in want.headers {
        let text = String(decoding: key, as: UTF8.self)
        guard let found = n.headers[text], Array(found.utf8) == value else {
            fatalError("header look-up failed for key \(key): \(hex(frame))")
        }
    }
}

private func roundTrip(_ n: BusNotification, _ frame: [UInt8]) {
    var canonical = frame
    canonical[n.name.rawValue.utf8.count + 1 + 7] = 0  // `reserved`: receivers ignore it, encoders write 0
    let encoded: [UInt8]
    do {
        encoded = try EnvelopeCodec.encode(n)
    } catch {
        fatalError("a decoded notification does not re-encode (\(error)): \(hex(frame))")
    }
    guard encoded == canonical else { fatalError("re-encoding differs: \(hex(frame)) -> \(hex(encoded))") }
}

private func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    var text = ""
    for byte in bytes.prefix(512) {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0xf)])
    }
    return bytes.count > 512 ? text + "..." : text
}

/// NBP-1 section 7, written for clarity rather than speed, independent of the codec's helpers.
enum Reference {
    struct Decoded {
        var name: [UInt8]
        var flags: UInt8
        var contentType: UInt8
        var sequence: UInt64
        var publisherID: UInt64
        var timestamp: UInt64
        var headers: [([UInt8], [UInt8])]
        var payload: [UInt8]
    }

    struct Reject: Error {
        let reason: String
        /// A rejected batch's declared record count (NBP-1 §7.5), where its header says.
        var records: Int?
        init(_ reason: String, records: Int? = nil) {
            self.reason = reason
            self.records = records
        }
    }

    static func decodeAll(_ frame: [UInt8], maximumPayload: Int) -> Result<[Decoded], Reject> {
        Result { () throws(Reject) in try parseAll(frame, maximumPayload: maximumPayload) }
    }

    /// NBP-1 §7.1 steps 1-6, then version 1 (steps 7-12) or a batch (§7.5).
    static func parseAll(_ frame: [UInt8], maximumPayload: Int) throws(Reject) -> [Decoded] {
        guard let nul = frame.prefix(256).firstIndex(of: 0) else { throw Reject("missingNameTerminator") }
        let name = frame[..<nul]
        guard utf8(name) else { throw Reject("invalidUTF8") }
        guard nameIsValid(name) else { throw Reject("invalidName") }
        let rest = Array(frame[(nul + 1)...])
        guard !rest.isEmpty else { throw Reject("truncatedHeader") }
        if rest[0] == 1 { return [try parse(frame, maximumPayload: maximumPayload)] }
        guard rest[0] == 2 else { throw Reject("unsupportedVersion") }
        // What a rejection reports, whatever step rejected it (§7.5): the header's count when the
        // header is there and the count is 1...1024, no more than the bytes hold (26 a record).
        let declared: Int? = {
            guard rest.count >= 16 else { return nil }
            let count = Int(be(rest[4..<6]))
            let room = (rest.count - 16) / 26
            return (1...1024).contains(count) && room >= 1 ? min(count, room) : nil
        }()
        func fail(_ reason: String) -> Reject { Reject(reason, records: declared) }
        // B0: never a control name (first token `_nbus`) in a batch.
        if name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).first.map(Array.init) == Array("_nbus".utf8) {
            throw fail("batchInvalid")
        }
        guard rest.count >= 16 else { throw fail("truncatedHeader") }
        guard Int(rest[2]) == name.count else { throw fail("nameLengthMismatch") }
        let count = Int(be(rest[4..<6]))
        guard (1...1024).contains(count) else { throw fail("batchInvalid") }
        // B4: within 4384 + max(maximum payload, 1 MiB), whatever the records say.
        guard name.count + 1 + rest.count <= 4_384 + max(maximumPayload, 1 << 20) else { throw fail("payloadTooLarge") }
        let publisherID = be(rest[8..<16])
        var out: [Decoded] = []
        var position = 16
        for _ in 0..<count {
            guard rest.count - position >= 26 else { throw fail("truncatedHeader") }
            let headerCount = Int(rest[position + 2])
            let headersLength = Int(be(rest[(position + 4)..<(position + 6)]))
            let payloadLength = Int(be(rest[(position + 6)..<(position + 10)]))
            guard headerCount <= 32, headersLength <= 4096 else { throw fail("headerLimitExceeded") }
            let mapStart = position + 26
            guard rest.count - mapStart >= headersLength else { throw fail("truncatedHeader") }
            let headers: [([UInt8], [UInt8])]
            do {
                headers = try walk(Array(rest[mapStart..<(mapStart + headersLength)]), count: headerCount)
            } catch {
                throw fail(error.reason)
            }
            let payloadStart = mapStart + headersLength
            guard payloadLength <= maximumPayload else { throw fail("payloadTooLarge") }
            guard rest.count - payloadStart >= payloadLength else { throw fail("truncatedHeader") }
            out.append(
                Decoded(
                    name: Array(name), flags: rest[position], contentType: rest[position + 1],
                    sequence: be(rest[(position + 10)..<(position + 18)]), publisherID: publisherID,
                    timestamp: be(rest[(position + 18)..<(position + 26)]), headers: headers,
                    payload: Array(rest[payloadStart..<(payloadStart + payloadLength)])))
            position = payloadStart + payloadLength
        }
        guard position == rest.count else { throw fail("batchInvalid") }
        return out
    }

    static func decode(_ frame: [UInt8], maximumPayload: Int) -> Result<Decoded, Reject> {
        Result { () throws(Reject) in try parse(frame, maximumPayload: maximumPayload) }
    }

    static func utf8(_ bytes: ArraySlice<UInt8>) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil
    }

    static func nameIsValid(_ name: ArraySlice<UInt8>) -> Bool {
        if name.isEmpty || name.count > 255 { return false }
        if name.contains(where: { $0 <= 0x20 || $0 == 0x7f || $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: ">") }) {
            return false
        }
        return !name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    static func be(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func parse(_ frame: [UInt8], maximumPayload: Int) throws(Reject) -> Decoded {
        guard let nul = frame.prefix(256).firstIndex(of: 0) else { throw Reject("missingNameTerminator") }
        let name = frame[..<nul]
        guard utf8(name) else { throw Reject("invalidUTF8") }
        guard nameIsValid(name) else { throw Reject("invalidName") }
        let rest = Array(frame[(nul + 1)...])
        guard !rest.isEmpty else { throw Reject("truncatedHeader") }
        guard rest[0] == 1 else { throw Reject("unsupportedVersion") }
        guard rest.count >= 32 else { throw Reject("truncatedHeader") }
        guard Int(rest[3]) == name.count else { throw Reject("nameLengthMismatch") }
        let headersLength = Int(be(rest[4..<6]))
        let headerCount = Int(rest[6])
        guard headerCount <= 32, headersLength <= 4096 else { throw Reject("headerLimitExceeded") }
        guard 32 + headersLength <= rest.count else { throw Reject("truncatedHeader") }
        let headers = try walk(Array(rest[32..<(32 + headersLength)]), count: headerCount)
        let payload = Array(rest[(32 + headersLength)...])
        guard payload.count <= maximumPayload else { throw Reject("payloadTooLarge") }
        return Decoded(
            name: Array(name), flags: rest[1], contentType: rest[2], sequence: be(rest[8..<16]),
            publisherID: be(rest[16..<24]), timestamp: be(rest[24..<32]), headers: headers, payload: payload)
    }

    /// NBP-1 §7.3: the header map `map`, `headerCount` entries, in the spec's order of checks.
    static func walk(_ map: [UInt8], count headerCount: Int) throws(Reject) -> [([UInt8], [UInt8])] {
        var position = 0
        var headers: [([UInt8], [UInt8])] = []
        for _ in 0..<headerCount {
            guard map.count - position >= 1 else { throw Reject("headerMapInvalid") }
            let keyLength = Int(map[position])
            position += 1
            guard keyLength != 0 else { throw Reject("headerMapInvalid") }
            guard keyLength <= 64 else { throw Reject("headerLimitExceeded") }
            guard map.count - position >= keyLength else { throw Reject("headerMapInvalid") }
            let key = map[position..<(position + keyLength)]
            position += keyLength
            guard map.count - position >= 2 else { throw Reject("headerMapInvalid") }
            let valueLength = Int(be(map[position..<(position + 2)]))
            position += 2
            guard valueLength <= 1024 else { throw Reject("headerLimitExceeded") }
            guard map.count - position >= valueLength else { throw Reject("headerMapInvalid") }
            let value = map[position..<(position + valueLength)]
            position += valueLength
            guard utf8(key) else { throw Reject("invalidUTF8") }
            guard !key.contains(0) else { throw Reject("headerMapInvalid") }
            guard utf8(value) else { throw Reject("invalidUTF8") }
            guard !headers.contains(where: { $0.0.elementsEqual(key) }) else { throw Reject("headerMapInvalid") }
            headers.append((Array(key), Array(value)))
        }
        guard position == map.count else { throw Reject("headerMapInvalid") }
        return headers
    }
}
