

/// Why a notification cannot be encoded: its headers break NBP/1's limits.
///
/// An enum, not a struct with static members like `BusError`, decided before 0.1.0: each case is
/// one of NBP/1's limits on what a frame may carry (`protocol/NBP-1.md` §6, and §2.3 for
/// batches), which are frozen with the protocol (a receiver drops a frame that breaks them). A
/// new case would come only with a new limit, a protocol change released as a breaking version.
public enum EncodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// More than 32 headers.
    case tooManyHeaders(count: Int)
    /// A key that is empty, over 64 bytes, or contains NUL.
    case invalidHeaderKey(String)
    /// A value over 1024 bytes.
    case headerValueTooLong(key: String, byteCount: Int)
    /// The encoded header map exceeds 4096 bytes.
    case headersTooLarge(byteCount: Int)
    /// A batch of no notification, or of more than 1024.
    case batchRecordCount(Int)
    /// A batch's notifications differ in name or publisher id (a batch is one stream's).
    case batchMixesStreams
    /// A batch of control messages (first token `_nbus`): they are never batched (NBP-1 §2.3).
    case batchOfControlName(String)
    /// A batch frame over `WireFormat.maximumBatchFrame` bytes (NBP-1 §2.3).
    case batchTooLarge(byteCount: Int)

    public var description: String {
        switch self {
        case .tooManyHeaders(let count): return "at most 32 headers are allowed, got \(count)"
        case .invalidHeaderKey(let key): return "header key \"\(key)\" must be 1-64 bytes of UTF-8 without NUL"
        case .headerValueTooLong(let key, let count):
            return "header \"\(key)\" has a \(count)-byte value; the limit is 1024"
        case .headersTooLarge(let count): return "headers encode to \(count) bytes; the limit is 4096"
        case .batchRecordCount(let count): return "a batch holds 1 to 1024 notifications, got \(count)"
        case .batchMixesStreams: return "a batch's notifications must share one name and one publisher id"
        case .batchOfControlName(let name): return "control messages are never batched: \(name)"
        case .batchTooLarge(let count):
            return "a batch frame of \(count) bytes is over \(WireFormat.maximumBatchFrame): send fewer per batch"
        }
    }
}

/// Encodes and decodes NBP/1 frames: `name` NUL, a 32-byte big-endian fixed header,
/// the header map, then the payload, all in one ZeroMQ frame.
///
/// Decoding never traps on any input: it returns the notification or throws the
/// `RejectionReason` the spec names, checking in the spec's order.
public enum EnvelopeCodec {
    // MARK: Encoding

    /// The exact encoded size of `notification`, after checking its headers against the limits.
    public static func encodedSize(of notification: BusNotification) throws(EncodeError) -> Int {
        try encodedSize(name: notification.name, headers: notification.headers, payloadCount: notification.payload.count)
    }

    /// Encodes `notification` into a new array of exactly the right size (one allocation).
    public static func encode(_ notification: BusNotification) throws(EncodeError) -> [UInt8] {
        let size = try encodedSize(of: notification)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = write(notification, into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Appends the encoding of `notification` to `buffer`, reusing its capacity (no allocation once warm).
    public static func encode(_ notification: BusNotification, appendingTo buffer: inout [UInt8]) throws(EncodeError) {
        let size = try encodedSize(of: notification)
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: size))
        buffer.withUnsafeMutableBytes { raw in
            _ = write(notification, into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
        }
    }

    private static func headersLength(_ headers: NotificationHeaders) throws(EncodeError) -> Int {
        if let error = headers.unrepresentable { throw error }
        guard headers.count <= WireFormat.maximumHeaderCount else { throw .tooManyHeaders(count: headers.count) }
        try headers.forEachEntry { key, value throws(EncodeError) in
            guard key.count >= 1, key.count <= WireFormat.maximumKeyLength, !key.contains(0) else {
                throw .invalidHeaderKey(String(decoding: key, as: UTF8.self))
            }
            guard value.count <= WireFormat.maximumValueLength else {
                throw .headerValueTooLong(key: String(decoding: key, as: UTF8.self), byteCount: value.count)
            }
        }
        guard headers.wire.count <= WireFormat.maximumHeadersLength else {
            throw .headersTooLarge(byteCount: headers.wire.count)
        }
        return headers.wire.count
    }

    /// Writes a notification whose size `encodedSize(of:)` checked into `out`; returns the bytes written.
    package static func write(_ notification: BusNotification, into out: UnsafeMutableRawBufferPointer) -> Int {
        write(
            name: notification.name, flags: notification.flags, contentType: notification.contentType,
            headers: notification.headers, payload: notification.payload, sequence: notification.sequence,
            publisherID: notification.publisherID, timestamp: notification.timestamp, into: out)
    }

    /// The bytes `write` needs for these parts (`encodedSize(of:)` without a `BusNotification`).
    package static func encodedSize(
        name: NotificationName, headers: NotificationHeaders, payloadCount: Int
    ) throws(EncodeError) -> Int {
        name.rawValue.utf8.count + 1 + WireFormat.fixedHeaderSize + (try headersLength(headers)) + payloadCount
    }

    /// Writes one notification from its parts (`post` needs no `BusNotification` value, and so no
    /// retains of its fields); `out` must hold exactly `encodedSize(name:headers:payloadCount:)`.
    package static func write(
        name: NotificationName, flags: UInt8, contentType: ContentType, headers: NotificationHeaders,
        payload: [UInt8], sequence: UInt64, publisherID: UInt64, timestamp: UInt64,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int {
        var position = 0
        func put(_ byte: UInt8) {
            out[position] = byte
            position += 1
        }
        func put<T: FixedWidthInteger>(bigEndian value: T) {
            out.storeBytes(of: value.bigEndian, toByteOffset: position, as: T.self)
            position += MemoryLayout<T>.size
        }
        func put<Bytes: Sequence<UInt8>>(bytes: Bytes) {
            // Contiguous (a native name, the header block): one copy; otherwise byte by byte.
            // The closure captures a constant, not `position`: a captured `var` is checked for
            // exclusive access at run time (it showed in the publisher's profile).
            let start = position
            let copied: Int? = bytes.withContiguousStorageIfAvailable { source in
                UnsafeMutableRawBufferPointer(rebasing: out[start..<(start + source.count)])
                    .copyMemory(from: UnsafeRawBufferPointer(source))
                return source.count
            }
            if let copied {
                position += copied
            } else {
                for byte in bytes { put(byte) }
            }
        }
        let nameBytes = name.rawValue.utf8
        put(bytes: nameBytes)
        put(0)
        let headersLength = headers.wire.count
        put(WireFormat.version)
        put(flags)
        put(contentType.rawValue)
        put(UInt8(truncatingIfNeeded: nameBytes.count))
        put(bigEndian: UInt16(truncatingIfNeeded: headersLength))
        put(UInt8(truncatingIfNeeded: headers.count))
        put(0)
        put(bigEndian: sequence)
        put(bigEndian: publisherID)
        put(bigEndian: timestamp)
        if headersLength > 0 { put(bytes: headers.wire) }
        let payloadStart = position
        payload.withUnsafeBytes { payload in
            if payload.count > 0 {
                UnsafeMutableRawBufferPointer(rebasing: out[payloadStart...]).copyMemory(from: payload)
            }
        }
        return payloadStart + payload.count
    }

    /// Overwrites the sequence number of an encoded frame whose name is `nameByteCount` bytes:
    /// a publisher encodes before it knows the number (outside its lock) and stamps it as it queues.
    @inlinable
    public static func stampSequence(_ sequence: UInt64, nameByteCount: Int, into frame: UnsafeMutableRawBufferPointer) {
        frame.storeBytes(
            of: sequence.bigEndian, toByteOffset: nameByteCount + 1 + WireFormat.FixedHeaderOffset.sequence,
            as: UInt64.self)
    }

    // MARK: Decoding

    /// Decodes a whole ZeroMQ message given as its frames; anything but one frame is `wrongFrameCount`.
    public static func decode(
        frames: [[UInt8]], maximumPayload: Int = WireFormat.defaultMaximumPayload,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> BusNotification {
        guard frames.count == 1 else { throw .wrongFrameCount }
        return try decode(frame: frames[0], maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount)
    }

    /// Decodes one frame.
    public static func decode(
        frame: [UInt8], maximumPayload: Int = WireFormat.defaultMaximumPayload,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> BusNotification {
        let result = frame.withUnsafeBytes { bytes in
            Result { () throws(RejectionReason) in
                try decode(bytes, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount)
            }
        }
        return try result.get()
    }

    /// The publisher id and sequence number of a single-notification frame (version 1) whose
    /// name is `nameLength` bytes, read from the fixed header without decoding the rest; nil for
    /// any other frame, or one too short to hold them. For telling a duplicate (NBP-1 §17)
    /// before paying for a decode: the frame is still checked by the decode if it is not one.
    @inlinable
    public static func peekStream(_ frame: UnsafeRawBufferPointer, nameLength: Int) -> (publisherID: UInt64, sequence: UInt64)? {
        let start = nameLength + 1
        guard nameLength >= 0, frame.count >= start + WireFormat.fixedHeaderSize,
            frame[start + WireFormat.FixedHeaderOffset.version] == WireFormat.version
        else { return nil }
        let publisherID = UInt64(bigEndian: frame.loadUnaligned(fromByteOffset: start + WireFormat.FixedHeaderOffset.publisherID, as: UInt64.self))
        let sequence = UInt64(bigEndian: frame.loadUnaligned(fromByteOffset: start + WireFormat.FixedHeaderOffset.sequence, as: UInt64.self))
        return (publisherID, sequence)
    }

    /// Where the name ends in `frame`, or the reason it has no valid name; cheap, for filtering
    /// before a full decode. The name is `frame[0..<nameLength]`.
    public static func nameLength(in frame: UnsafeRawBufferPointer) throws(RejectionReason) -> Int {
        let limit = min(frame.count, WireFormat.maximumNameLength + 1)
        var index = 0
        while index < limit && frame[index] != 0 { index += 1 }
        guard index < limit else { throw .missingNameTerminator }
        let name = UnsafeRawBufferPointer(rebasing: frame[0..<index])
        guard UTF8Validation.isValid(name) else { throw .invalidUTF8 }
        guard NameGrammar.check(name, allowWildcards: false) == nil else { throw .invalidName }
        return index
    }

    /// Decodes one frame lent as raw bytes (e.g. straight from a `zmq_msg_t`). Allocations: one
    /// copy of the header map (when there are headers), one of the payload (when non-empty), and
    /// the name only when it is longer than 15 bytes (Swift's small-string limit).
    ///
    /// `maximumHeaderCount` is this receiver's own limit (NBP/1's 32 at most, like `maximumPayload`
    /// a local setting): more headers than that is `headerLimitExceeded`, checked at NBP/1's step 9.
    public static func decode(
        _ frame: UnsafeRawBufferPointer, maximumPayload: Int = WireFormat.defaultMaximumPayload,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> BusNotification {
        try decode(
            frame, validatedNameLength: try nameLength(in: frame), name: nil, maximumPayload: maximumPayload,
            maximumHeaderCount: maximumHeaderCount)
    }

    /// `decode` for a frame whose name `nameLength(in:)` (or an exact subscription prefix) has
    /// already vouched for; `name`, when given, is that name, reused instead of a new string.
    package static func decode(
        _ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, name knownName: NotificationName?,
        maximumPayload: Int, maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> BusNotification {
        let layout = try checkFrame(
            frame, validatedNameLength: nameCount, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount)
        typealias Offset = WireFormat.FixedHeaderOffset
        let headerStart = nameCount + 1
        func u64(_ offset: Int) -> UInt64 {
            UInt64(bigEndian: frame.loadUnaligned(fromByteOffset: headerStart + offset, as: UInt64.self))
        }
        // The map was checked with the rest: its wire form is copied as it is.
        let headers =
            layout.headerCount == 0
            ? NotificationHeaders()
            : NotificationHeaders(
                validatedWire: [UInt8](UnsafeRawBufferPointer(rebasing: frame[layout.mapStart..<layout.mapEnd])),
                count: layout.headerCount)
        let name = knownName ?? NotificationName(validatedBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameCount]))
        let payload = layout.mapEnd == frame.count ? [] : [UInt8](UnsafeRawBufferPointer(rebasing: frame[layout.mapEnd...]))
        return BusNotification(
            name: name, payload: payload, headers: headers,
            contentType: ContentType(rawValue: frame[headerStart + Offset.contentType]),
            sequence: u64(Offset.sequence), publisherID: u64(Offset.publisherID), timestamp: u64(Offset.timestamp),
            flags: frame[headerStart + Offset.flags])
    }

    /// Whether `decode` would accept this version 1 frame (name vouched for as for `decode`),
    /// found by the same checks without copying anything. A receiver discards a copy another path
    /// brought first (NBP-1 §17) only when this holds: a malformed one goes to `decode`, which
    /// rejects and counts it under its reason, and is never taken for a duplicate.
    package static func isAcceptable(
        _ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, maximumPayload: Int,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) -> Bool {
        do {
            _ = try checkFrame(
                frame, validatedNameLength: nameCount, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount)
            return true
        } catch {
            return false
        }
    }

    /// Where a checked version 1 frame's header map lies, and its entries.
    struct FrameLayout {
        let mapStart: Int
        let mapEnd: Int
        let headerCount: Int
    }

    /// Every check of NBP-1 §7.1 on a version 1 frame after its name, in that order (what `decode`
    /// and `isAcceptable` share, so they accept exactly the same frames); copies nothing.
    @inline(__always)
    static func checkFrame(
        _ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, maximumPayload: Int, maximumHeaderCount: Int
    ) throws(RejectionReason) -> FrameLayout {
        let headerStart = nameCount + 1
        let afterNul = frame.count - headerStart
        guard afterNul >= 1 else { throw .truncatedHeader }
        typealias Offset = WireFormat.FixedHeaderOffset
        guard frame[headerStart + Offset.version] == WireFormat.version else { throw .unsupportedVersion }
        guard afterNul >= WireFormat.fixedHeaderSize else { throw .truncatedHeader }
        guard Int(frame[headerStart + Offset.nameLength]) == nameCount else { throw .nameLengthMismatch }
        let headersLength = Int(
            UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: headerStart + Offset.headersLength, as: UInt16.self)))
        let headerCount = Int(frame[headerStart + Offset.headerCount])
        guard headerCount <= min(maximumHeaderCount, WireFormat.maximumHeaderCount),
            headersLength <= WireFormat.maximumHeadersLength
        else {
            throw .headerLimitExceeded
        }
        guard WireFormat.fixedHeaderSize + headersLength <= afterNul else { throw .truncatedHeader }
        let mapStart = headerStart + WireFormat.fixedHeaderSize
        let mapEnd = mapStart + headersLength
        try validateHeaders(frame, from: mapStart, to: mapEnd, count: headerCount)
        guard frame.count - mapEnd <= maximumPayload else { throw .payloadTooLarge }
        return FrameLayout(mapStart: mapStart, mapEnd: mapEnd, headerCount: headerCount)
    }

    /// Validates the header map in place, then copies it once (its wire form is the storage).
    static func decodeHeaders(
        _ frame: UnsafeRawBufferPointer, from start: Int, to end: Int, count: Int
    ) throws(RejectionReason) -> NotificationHeaders {
        try validateHeaders(frame, from: start, to: end, count: count)
        guard count > 0 else { return NotificationHeaders() }
        return NotificationHeaders(
            validatedWire: [UInt8](UnsafeRawBufferPointer(rebasing: frame[start..<end])), count: count)
    }

    /// The header map's checks (NBP-1 §7.1) without copying anything: what `decodeHeaders`
    /// checks, for a peek that must reject exactly what a decode rejects.
    static func validateHeaders(
        _ frame: UnsafeRawBufferPointer, from start: Int, to end: Int, count: Int
    ) throws(RejectionReason) {
        guard count > 0 else {
            guard start == end else { throw .headerMapInvalid }
            return
        }
        var position = start
        for entryIndex in 0..<count {
            guard position + 1 <= end else { throw .headerMapInvalid }
            let keyCount = Int(frame[position])
            position += 1
            guard keyCount != 0 else { throw .headerMapInvalid }
            guard keyCount <= WireFormat.maximumKeyLength else { throw .headerLimitExceeded }
            guard position + keyCount <= end else { throw .headerMapInvalid }
            let keyRange = position..<(position + keyCount)
            position += keyCount
            guard position + 2 <= end else { throw .headerMapInvalid }
            let valueCount = Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
            position += 2
            guard valueCount <= WireFormat.maximumValueLength else { throw .headerLimitExceeded }
            guard position + valueCount <= end else { throw .headerMapInvalid }
            let value = UnsafeRawBufferPointer(rebasing: frame[position..<(position + valueCount)])
            position += valueCount

            let key = UnsafeRawBufferPointer(rebasing: frame[keyRange])
            guard UTF8Validation.isValid(key) else { throw .invalidUTF8 }
            guard !key.contains(0) else { throw .headerMapInvalid }
            guard UTF8Validation.isValid(value) else { throw .invalidUTF8 }
            if entryIndex > 0, containsKey(key, in: frame, from: start, entries: entryIndex) {
                throw .headerMapInvalid
            }
        }
        guard position == end else { throw .headerMapInvalid }
    }

    /// Whether one of the first `entries` (already validated) entries from `start` has `key`.
    private static func containsKey(
        _ key: UnsafeRawBufferPointer, in frame: UnsafeRawBufferPointer, from start: Int, entries: Int
    ) -> Bool {
        var position = start
        for _ in 0..<entries {
            let keyCount = Int(frame[position])
            let keyRange = (position + 1)..<(position + 1 + keyCount)
            if keyCount == key.count && UnsafeRawBufferPointer(rebasing: frame[keyRange]).elementsEqual(key) {
                return true
            }
            position = keyRange.upperBound
            let valueCount = Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
            position += 2 + valueCount
        }
        return false
    }
}
