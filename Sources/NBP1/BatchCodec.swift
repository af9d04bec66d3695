/// NBP/1 batch frames (version byte 2, NBP-1 §2.3): several notifications of one name from one
/// publisher in one ZeroMQ frame. The name comes first, as in every frame, so prefix filtering
/// stays exact; what the notifications share (name, publisher id) is written once, and each
/// record carries what may differ (flags, content type, sequence, time, headers, payload).
extension WireFormat {
    /// The version byte of a batch frame.
    public static let batchVersion: UInt8 = 2
    /// Bytes of the batch header after the name's NUL.
    public static let batchHeaderSize = 16
    /// Bytes of each record's fixed part, before its header map and payload.
    public static let batchRecordHeaderSize = 26
    /// Most records in one batch frame (a receiver rejects more as `batchInvalid`): it bounds the
    /// notifications one frame can make a receiver allocate, whatever their size.
    public static let maximumBatchRecords = 1024
    /// The largest batch frame NotificationBus builds by default (name, headers and payloads
    /// included), far below every receiver's limits: about 115 notifications of 256 bytes.
    /// It was 4 KiB (about 13) until issue 41 measured what each frame costs the broker and the
    /// subscriber, per notification, beside NATS: 32 KiB took the broker from 1.25x NATS's
    /// server CPU to 0.85x and the subscriber from 1.40x to 1.03x (medians of 5 alternated runs,
    /// BENCHMARKS.md). What had kept it small is handled elsewhere now: a subscriber's read round
    /// is bounded by its buffers' room (a slow subscriber at 24,000/s is no longer cut), the
    /// broker's budget is in bytes (`SubscriberBacklogWatch`), and a waiting publisher's ZeroMQ
    /// send mark holds the same bytes whatever the frame (`BusConfiguration.sendHighWaterMark`),
    /// so its full queue does not hold eight times the notifications. 64 KiB frames had a stopped subscriber
    /// within its 64 MiB budget disconnected after 42 MB (NBP-1 §10).
    public static let defaultMaximumBatchFrame = 32 * 1024

    /// The largest batch frame a producer may send (NBP-1 §2.3): the largest version 1 frame at
    /// the default maximum payload, 4384 + 1048576 = 1,052,960 bytes. Fixed, because a producer
    /// cannot know its receivers' maximum payloads; every receiver accepts a batch this large.
    public static let maximumBatchFrame = largestFrame(maximumPayload: defaultMaximumPayload)

    /// The largest batch frame a receiver whose maximum payload is `maximumPayload` accepts
    /// (NBP-1 §7.5, step B4): `maximumBatchFrame`, or the largest version 1 frame for its own
    /// maximum when that is larger. A larger one is `payloadTooLarge`, counted like any rejection.
    public static func batchFrameLimit(maximumPayload: Int) -> Int {
        max(maximumBatchFrame, largestFrame(maximumPayload: maximumPayload))
    }

    /// Where each field of the batch header sits, counted from the byte after the name's NUL.
    public enum BatchHeaderOffset {
        /// The version byte (2).
        public static let version = 0
        /// Flags of the batch; written 0, ignored on receipt.
        public static let flags = 1
        /// The name's length in bytes (u8), repeated for checking.
        public static let nameLength = 2
        /// Reserved; written 0, ignored on receipt.
        public static let reserved = 3
        /// The number of records (u16, big-endian), 1 to 1024.
        public static let recordCount = 4
        /// Reserved (u16); written 0, ignored on receipt.
        public static let reserved2 = 6
        /// The publisher id of every record (u64, big-endian).
        public static let publisherID = 8
    }

    /// Where each field of a record's fixed part sits, counted from the record's first byte.
    public enum BatchRecordOffset {
        /// The notification's flags byte.
        public static let flags = 0
        /// The notification's content-type byte.
        public static let contentType = 1
        /// The number of header entries (u8).
        public static let headerCount = 2
        /// Reserved; written 0, ignored on receipt.
        public static let reserved = 3
        /// The header map's length in bytes (u16, big-endian).
        public static let headersLength = 4
        /// The payload's length in bytes (u32, big-endian).
        public static let payloadLength = 6
        /// The notification's sequence number (u64, big-endian).
        public static let sequence = 10
        /// The notification's publish time, ns since the Unix epoch (u64, big-endian).
        public static let timestamp = 18
    }
}

extension EnvelopeCodec {
    // MARK: Decoding any frame

    /// Decodes a whole ZeroMQ message, one notification (version 1) or a batch (version 2), into
    /// its notifications in order. What every receiver uses: NBP/1 receivers must accept both.
    public static func decodeAll(
        frames: [[UInt8]], maximumPayload: Int = WireFormat.defaultMaximumPayload,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> [BusNotification] {
        guard frames.count == 1 else { throw .wrongFrameCount }
        let result = frames[0].withUnsafeBytes { bytes in
            Result { () throws(RejectionReason) in
                try decodeAll(bytes, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount)
            }
        }
        return try result.get()
    }

    /// Decodes one frame lent as raw bytes, one notification or a batch.
    public static func decodeAll(
        _ frame: UnsafeRawBufferPointer, maximumPayload: Int = WireFormat.defaultMaximumPayload,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> [BusNotification] {
        let nameCount = try nameLength(in: frame)
        if isBatch(frame, nameLength: nameCount) {
            return try decodeBatch(
                frame, validatedNameLength: nameCount, name: nil, maximumPayload: maximumPayload,
                maximumHeaderCount: maximumHeaderCount)
        }
        return [
            try decode(
                frame, validatedNameLength: nameCount, name: nil, maximumPayload: maximumPayload,
                maximumHeaderCount: maximumHeaderCount)
        ]
    }

    /// Whether the frame's version byte (after a name of `nameLength` bytes) says batch.
    @inlinable
    public static func isBatch(_ frame: UnsafeRawBufferPointer, nameLength: Int) -> Bool {
        nameLength + 1 < frame.count && frame[nameLength + 1] == WireFormat.batchVersion
    }

    /// The record count a batch frame declares, when its batch header is there and the count is
    /// within NBP/1's limits (1 to 1024), but no more than its bytes can hold (each record's fixed
    /// part is 26 bytes, NBP-1 §7.5): a header that lies cannot make one small frame count as
    /// 1,024 notifications. nil otherwise (and for a version 1 frame, and a batch with no room
    /// for a record). What a receiver reports as the notifications a rejected batch held, and
    /// counts for a batch it filters out without decoding; a batch that decodes holds exactly
    /// this many.
    public static func declaredRecordCount(in frame: UnsafeRawBufferPointer, nameLength: Int) -> Int? {
        let start = nameLength + 1
        guard isBatch(frame, nameLength: nameLength), frame.count - start >= WireFormat.batchHeaderSize else {
            return nil
        }
        let count = Int(
            UInt16(
                bigEndian: frame.loadUnaligned(
                    fromByteOffset: start + WireFormat.BatchHeaderOffset.recordCount, as: UInt16.self)))
        guard (1...WireFormat.maximumBatchRecords).contains(count) else { return nil }
        let room = (frame.count - start - WireFormat.batchHeaderSize) / WireFormat.batchRecordHeaderSize
        return room >= 1 ? min(count, room) : nil
    }

    /// The notifications a frame says it carries (a batch's declared count, as many as its bytes
    /// can hold; else 1), read from its header without validating anything else: for counting,
    /// where a frame is not decoded (what a publisher sent, what a broker forwarded). A frame without a NUL in its first 256
    /// bytes counts as 1.
    public static func notificationCount(inEncodedFrame frame: UnsafeRawBufferPointer) -> Int {
        let limit = min(frame.count, WireFormat.maximumNameLength + 1)
        var nameLength = 0
        while nameLength < limit && frame[nameLength] != 0 { nameLength += 1 }
        guard nameLength < limit else { return 1 }
        return declaredRecordCount(in: frame, nameLength: nameLength) ?? 1
    }

    /// The publisherId field of a version 1 or version 2 frame (NBP-1 §2.1, §2.3), read from its
    /// fixed or batch header without validating anything else; nil when the frame has no NUL in
    /// its first 256 bytes, another version, or is too short to hold the field. For a broker,
    /// which never decodes a frame but must know whose it claims to be.
    public static func publisherID(inEncodedFrame frame: UnsafeRawBufferPointer) -> UInt64? {
        let limit = min(frame.count, WireFormat.maximumNameLength + 1)
        var nameLength = 0
        while nameLength < limit && frame[nameLength] != 0 { nameLength += 1 }
        // An empty name is no NBP/1 frame either.
        guard nameLength > 0, nameLength < limit else { return nil }
        let start = nameLength + 1
        guard start < frame.count else { return nil }
        let offset: Int
        switch frame[start] {
        case WireFormat.version:
            guard frame.count - start >= WireFormat.fixedHeaderSize else { return nil }
            offset = start + WireFormat.FixedHeaderOffset.publisherID
        case WireFormat.batchVersion:
            guard frame.count - start >= WireFormat.batchHeaderSize else { return nil }
            offset = start + WireFormat.BatchHeaderOffset.publisherID
        default:
            return nil
        }
        return UInt64(bigEndian: frame.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Decodes a batch frame whose name `nameLength(in:)` (or an exact subscription prefix) has
    /// vouched for, checking in NBP-1 §7.5's order (steps B0 to B4, then R1 to R6 per record, then
    /// B5). All or nothing: a fault in any record rejects the whole frame, so a receiver never
    /// delivers part of a batch and its sequence tracking sees the whole batch as lost.
    package static func decodeBatch(
        _ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, name knownName: NotificationName?,
        maximumPayload: Int, maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) throws(RejectionReason) -> [BusNotification] {
        typealias Record = WireFormat.BatchRecordOffset
        func u64(_ offset: Int) -> UInt64 {
            UInt64(bigEndian: frame.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        let name = knownName ?? NotificationName(validatedBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameCount]))
        var notifications: [BusNotification] = []
        _ = try walkBatch(
            frame, validatedNameLength: nameCount, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount
        ) { record in
            if record.index == 0 { notifications.reserveCapacity(record.recordCount) }
            let position = record.start
            // The map was checked by the walk: its wire form is copied as it is.
            let headers =
                record.headerCount == 0
                ? NotificationHeaders()
                : NotificationHeaders(
                    validatedWire: [UInt8](UnsafeRawBufferPointer(rebasing: frame[record.mapStart..<record.mapEnd])),
                    count: record.headerCount)
            let payload =
                record.payloadEnd == record.mapEnd
                ? [] : [UInt8](UnsafeRawBufferPointer(rebasing: frame[record.mapEnd..<record.payloadEnd]))
            notifications.append(
                BusNotification(
                    name: name, payload: payload, headers: headers,
                    contentType: ContentType(rawValue: frame[position + Record.contentType]),
                    sequence: u64(position + Record.sequence), publisherID: record.publisherID,
                    timestamp: u64(position + Record.timestamp), flags: frame[position + Record.flags]))
        }
        return notifications
    }

    /// A batch frame's publisher id, record count and the range of its records' sequence numbers,
    /// when `decodeBatch` would accept the frame (name vouched for as for it); nil when it would
    /// reject it. The same walk and checks, copying nothing: a receiver can tell a batch another
    /// path brought first (NBP-1 §17) without decoding it, and a malformed batch is never taken
    /// for a duplicate (a nil sends it to `decodeBatch`, which rejects and names the fault).
    package static func peekBatch(
        _ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, maximumPayload: Int,
        maximumHeaderCount: Int = WireFormat.maximumHeaderCount
    ) -> BatchPeek? {
        var lowest = UInt64.max
        var highest: UInt64 = 0
        do {
            let (publisherID, recordCount) = try walkBatch(
                frame, validatedNameLength: nameCount, maximumPayload: maximumPayload, maximumHeaderCount: maximumHeaderCount
            ) { record in
                let sequence = UInt64(
                    bigEndian: frame.loadUnaligned(
                        fromByteOffset: record.start + WireFormat.BatchRecordOffset.sequence, as: UInt64.self))
                lowest = min(lowest, sequence)
                highest = max(highest, sequence)
            }
            return BatchPeek(
                publisherID: publisherID, recordCount: recordCount, lowestSequence: lowest, highestSequence: highest)
        } catch {
            return nil
        }
    }

    /// A batch frame's publisher id and its first record's sequence number, read from where they
    /// sit without checking anything else; nil for any other frame or one too short to hold them.
    /// The cheap first look (as `peekStream` for a version 1 frame): only when it names a copy is
    /// the whole frame walked (`peekBatch`).
    package static func peekBatchStart(_ frame: UnsafeRawBufferPointer, nameLength: Int) -> (publisherID: UInt64, sequence: UInt64)? {
        let start = nameLength + 1
        let firstRecord = start + WireFormat.batchHeaderSize
        guard nameLength >= 0, frame.count >= firstRecord + WireFormat.batchRecordHeaderSize,
            frame[start + WireFormat.BatchHeaderOffset.version] == WireFormat.batchVersion
        else { return nil }
        let publisherID = UInt64(
            bigEndian: frame.loadUnaligned(fromByteOffset: start + WireFormat.BatchHeaderOffset.publisherID, as: UInt64.self))
        let sequence = UInt64(
            bigEndian: frame.loadUnaligned(fromByteOffset: firstRecord + WireFormat.BatchRecordOffset.sequence, as: UInt64.self))
        return (publisherID, sequence)
    }

    /// One record of a batch frame as `walkBatch` checked it: where its parts lie.
    struct BatchRecordLayout {
        /// The publisher id of the batch, and the record count it declares.
        let publisherID: UInt64
        let recordCount: Int
        /// This record's place among them (0 first).
        let index: Int
        /// Its first byte (the fixed part), its header map, and the end of its payload (which
        /// begins at `mapEnd`).
        let start: Int
        let mapStart: Int
        let mapEnd: Int
        let payloadEnd: Int
        let headerCount: Int
    }

    /// Checks a batch frame in NBP-1 §7.5's order (B0 to B4, then R1 to R6 per record, then B5),
    /// handing each record to `record` once it is checked; returns the publisher id and record
    /// count. What `decodeBatch` and `peekBatch` share, so they accept exactly the same frames.
    /// (`decodeBatch` may have appended records before a later one throws: it discards them.)
    @inline(__always)
    static func walkBatch(
        _ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, maximumPayload: Int, maximumHeaderCount: Int,
        record: (BatchRecordLayout) -> Void
    ) throws(RejectionReason) -> (publisherID: UInt64, recordCount: Int) {
        let start = nameCount + 1
        guard frame.count > start else { throw .truncatedHeader }
        guard frame[start] == WireFormat.batchVersion else { throw .unsupportedVersion }
        typealias Batch = WireFormat.BatchHeaderOffset
        typealias Record = WireFormat.BatchRecordOffset
        func u16(_ offset: Int) -> Int {
            Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
        }
        func u32(_ offset: Int) -> Int {
            Int(UInt32(bigEndian: frame.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        // B0: control messages are never batched (NBP-1 §2.3), so a batch carrying a control name
        // is no readiness echo or end-of-stream record: malformed, acted on by nothing.
        if frame[0] == UInt8(ascii: "_"),
            ControlNames.isReserved(nameBytes: UnsafeRawBufferPointer(rebasing: frame[0..<nameCount]))
        {
            throw .batchInvalid
        }
        // B1-B3: the batch header.
        guard frame.count - start >= WireFormat.batchHeaderSize else { throw .truncatedHeader }
        guard Int(frame[start + Batch.nameLength]) == nameCount else { throw .nameLengthMismatch }
        let recordCount = u16(start + Batch.recordCount)
        guard recordCount >= 1, recordCount <= WireFormat.maximumBatchRecords else { throw .batchInvalid }
        // B4: no larger than a producer may send (or than this receiver's largest single frame).
        guard frame.count <= WireFormat.batchFrameLimit(maximumPayload: maximumPayload) else { throw .payloadTooLarge }
        let publisherID = UInt64(bigEndian: frame.loadUnaligned(fromByteOffset: start + Batch.publisherID, as: UInt64.self))
        let headerLimit = min(maximumHeaderCount, WireFormat.maximumHeaderCount)

        var position = start + WireFormat.batchHeaderSize
        for index in 0..<recordCount {
            // R1-R6: one record.
            guard frame.count - position >= WireFormat.batchRecordHeaderSize else { throw .truncatedHeader }
            let headerCount = Int(frame[position + Record.headerCount])
            let headersLength = u16(position + Record.headersLength)
            guard headerCount <= headerLimit, headersLength <= WireFormat.maximumHeadersLength else {
                throw .headerLimitExceeded
            }
            let mapStart = position + WireFormat.batchRecordHeaderSize
            guard frame.count - mapStart >= headersLength else { throw .truncatedHeader }
            let mapEnd = mapStart + headersLength
            try validateHeaders(frame, from: mapStart, to: mapEnd, count: headerCount)
            let payloadCount = u32(position + Record.payloadLength)
            guard payloadCount <= maximumPayload else { throw .payloadTooLarge }
            guard frame.count - mapEnd >= payloadCount else { throw .truncatedHeader }
            let payloadEnd = mapEnd + payloadCount
            record(
                BatchRecordLayout(
                    publisherID: publisherID, recordCount: recordCount, index: index, start: position,
                    mapStart: mapStart, mapEnd: mapEnd, payloadEnd: payloadEnd, headerCount: headerCount))
            position = payloadEnd
        }
        // B5: the records fill the frame exactly.
        guard position == frame.count else { throw .batchInvalid }
        return (publisherID, recordCount)
    }

    // MARK: Encoding

    /// Encodes `notifications` (1 to 1024, one name and one publisher id) as one batch frame.
    /// For tests and foreign producers; a NotificationBus publisher batches encoded frames
    /// (`batchedSize(ofFrames:nameLength:)`, `writeBatch`). Refuses what NBP-1 §2.3 forbids a
    /// producer: a control name, and a frame over `WireFormat.maximumBatchFrame`.
    public static func encodeBatch(_ notifications: [BusNotification]) throws(EncodeError) -> [UInt8] {
        guard let first = notifications.first, notifications.count <= WireFormat.maximumBatchRecords else {
            throw .batchRecordCount(notifications.count)
        }
        guard !ControlNames.isReserved(first.name) else { throw .batchOfControlName(first.name.rawValue) }
        var frames: [[UInt8]] = []
        frames.reserveCapacity(notifications.count)
        for notification in notifications {
            guard notification.name == first.name, notification.publisherID == first.publisherID else {
                throw .batchMixesStreams
            }
            frames.append(try encode(notification))
        }
        let nameLength = first.name.rawValue.utf8.count
        let size = frames.reduce(nameLength + 1 + WireFormat.batchHeaderSize) {
            $0 + batchedRecordSize(ofFrameCount: $1.count, nameLength: nameLength)
        }
        guard size <= WireFormat.maximumBatchFrame else { throw .batchTooLarge(byteCount: size) }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = writeBatch(
                frameCount: frames.count, nameLength: nameLength,
                frame: { index, body in frames[index].withUnsafeBytes(body) },
                into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// The bytes a version 1 frame of `frameCount` bytes takes as a batch record: its header map
    /// and payload, plus the record's 26-byte fixed part instead of the name, NUL and 32-byte header.
    @inlinable
    public static func batchedRecordSize(ofFrameCount frameCount: Int, nameLength: Int) -> Int {
        frameCount - nameLength - 1 - WireFormat.fixedHeaderSize + WireFormat.batchRecordHeaderSize
    }

    /// Writes `frameCount` version 1 frames this codec encoded (every one of the same name, of
    /// `nameLength` bytes, and the same publisher id; at most 1024) as one batch frame into `out`,
    /// which must hold exactly `nameLength + 17` plus each frame's `batchedRecordSize`; returns
    /// the bytes written. `frame(index, body)` lends the frame at `index` to `body`. The frames
    /// are trusted (this process's own), so nothing is checked again.
    public static func writeBatch(
        frameCount: Int, nameLength: Int,
        frame: (Int, (UnsafeRawBufferPointer) -> Void) -> Void,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int {
        typealias Fixed = WireFormat.FixedHeaderOffset
        typealias Batch = WireFormat.BatchHeaderOffset
        typealias Record = WireFormat.BatchRecordOffset
        let headerStart = nameLength + 1
        var position = headerStart + WireFormat.batchHeaderSize
        for index in 0..<frameCount {
            frame(index) { source in
                if index == 0 {
                    // The name, its NUL and the batch header, from the first frame.
                    UnsafeMutableRawBufferPointer(rebasing: out[0..<headerStart])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[0..<headerStart]))
                    out[headerStart + Batch.version] = WireFormat.batchVersion
                    out[headerStart + Batch.flags] = 0
                    out[headerStart + Batch.nameLength] = UInt8(truncatingIfNeeded: nameLength)
                    out[headerStart + Batch.reserved] = 0
                    out.storeBytes(
                        of: UInt16(truncatingIfNeeded: frameCount).bigEndian,
                        toByteOffset: headerStart + Batch.recordCount, as: UInt16.self)
                    out.storeBytes(of: UInt16(0), toByteOffset: headerStart + Batch.reserved2, as: UInt16.self)
                    // The publisher id, copied as it is (big-endian already).
                    UnsafeMutableRawBufferPointer(
                        rebasing: out[(headerStart + Batch.publisherID)..<(headerStart + Batch.publisherID + 8)]
                    ).copyMemory(
                        from: UnsafeRawBufferPointer(
                            rebasing: source[(headerStart + Fixed.publisherID)..<(headerStart + Fixed.publisherID + 8)]))
                }
                let bodyStart = headerStart + WireFormat.fixedHeaderSize
                let headersLength = Int(
                    UInt16(
                        bigEndian: source.loadUnaligned(fromByteOffset: headerStart + Fixed.headersLength, as: UInt16.self)
                    ))
                let bodyCount = source.count - bodyStart
                let payloadCount = bodyCount - headersLength
                out[position + Record.flags] = source[headerStart + Fixed.flags]
                out[position + Record.contentType] = source[headerStart + Fixed.contentType]
                out[position + Record.headerCount] = source[headerStart + Fixed.headerCount]
                out[position + Record.reserved] = 0
                out.storeBytes(
                    of: UInt16(truncatingIfNeeded: headersLength).bigEndian,
                    toByteOffset: position + Record.headersLength, as: UInt16.self)
                out.storeBytes(
                    of: UInt32(truncatingIfNeeded: payloadCount).bigEndian,
                    toByteOffset: position + Record.payloadLength, as: UInt32.self)
                // Sequence and timestamp, big-endian as they are.
                UnsafeMutableRawBufferPointer(rebasing: out[(position + Record.sequence)..<(position + Record.sequence + 8)])
                    .copyMemory(
                        from: UnsafeRawBufferPointer(
                            rebasing: source[(headerStart + Fixed.sequence)..<(headerStart + Fixed.sequence + 8)]))
                UnsafeMutableRawBufferPointer(
                    rebasing: out[(position + Record.timestamp)..<(position + Record.timestamp + 8)]
                ).copyMemory(
                    from: UnsafeRawBufferPointer(
                        rebasing: source[(headerStart + Fixed.timestamp)..<(headerStart + Fixed.timestamp + 8)]))
                position += WireFormat.batchRecordHeaderSize
                if bodyCount > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: out[position..<(position + bodyCount)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[bodyStart...]))
                }
                position += bodyCount
            }
        }
        return position
    }
}

// MARK: Records written in place

/// A publisher that writes its posts straight into an open batch frame (`OutboundPosts`): the
/// batch header once per run of one name, then each post as its record, so the frame is made
/// as the posts come and sent with no second pass over them.
extension EnvelopeCodec {
    /// The bytes a batch frame's name, NUL and batch header take for a name of `nameLength` bytes.
    @inlinable
    package static func batchHeaderBytes(nameLength: Int) -> Int {
        nameLength + 1 + WireFormat.batchHeaderSize
    }

    /// The bytes one post takes as a batch record: its fixed part, header map and payload.
    @inlinable
    package static func batchRecordBytes(headersLength: Int, payloadCount: Int) -> Int {
        WireFormat.batchRecordHeaderSize + headersLength + payloadCount
    }

    /// Writes a batch frame's name, NUL and batch header (record count 0: `setBatchRecordCount`
    /// writes it once the frame is complete) into `out`, which must hold `batchHeaderBytes`.
    package static func writeBatchHeader(
        name: NotificationName, publisherID: UInt64, into out: UnsafeMutableRawBufferPointer
    ) {
        var name = name.rawValue
        let nameLength = name.withUTF8 { bytes -> Int in
            if bytes.count > 0 {
                UnsafeMutableRawBufferPointer(rebasing: out[0..<bytes.count]).copyMemory(from: UnsafeRawBufferPointer(bytes))
            }
            return bytes.count
        }
        typealias Batch = WireFormat.BatchHeaderOffset
        let headerStart = nameLength + 1
        out[nameLength] = 0
        out[headerStart + Batch.version] = WireFormat.batchVersion
        out[headerStart + Batch.flags] = 0
        out[headerStart + Batch.nameLength] = UInt8(truncatingIfNeeded: nameLength)
        out[headerStart + Batch.reserved] = 0
        out.storeBytes(of: UInt16(0), toByteOffset: headerStart + Batch.recordCount, as: UInt16.self)
        out.storeBytes(of: UInt16(0), toByteOffset: headerStart + Batch.reserved2, as: UInt16.self)
        out.storeBytes(of: publisherID.bigEndian, toByteOffset: headerStart + Batch.publisherID, as: UInt64.self)
    }

    /// Writes the record count into a batch frame `writeBatchHeader` began.
    @inlinable
    package static func setBatchRecordCount(_ count: Int, nameLength: Int, in frame: UnsafeMutableRawBufferPointer) {
        frame.storeBytes(
            of: UInt16(truncatingIfNeeded: count).bigEndian,
            toByteOffset: nameLength + 1 + WireFormat.BatchHeaderOffset.recordCount, as: UInt16.self)
    }

    /// Writes one post as a batch record into `out`, which must hold exactly
    /// `batchRecordBytes(headersLength:payloadCount:)`; the fields are those `write` takes.
    package static func writeBatchRecord(
        flags: UInt8, contentType: ContentType, headers: NotificationHeaders, payload: [UInt8], sequence: UInt64,
        timestamp: UInt64, into out: UnsafeMutableRawBufferPointer
    ) {
        typealias Record = WireFormat.BatchRecordOffset
        let headersLength = headers.wire.count
        out[Record.flags] = flags
        out[Record.contentType] = contentType.rawValue
        out[Record.headerCount] = UInt8(truncatingIfNeeded: headers.count)
        out[Record.reserved] = 0
        out.storeBytes(
            of: UInt16(truncatingIfNeeded: headersLength).bigEndian, toByteOffset: Record.headersLength, as: UInt16.self)
        out.storeBytes(
            of: UInt32(truncatingIfNeeded: payload.count).bigEndian, toByteOffset: Record.payloadLength, as: UInt32.self)
        out.storeBytes(of: sequence.bigEndian, toByteOffset: Record.sequence, as: UInt64.self)
        out.storeBytes(of: timestamp.bigEndian, toByteOffset: Record.timestamp, as: UInt64.self)
        var position = WireFormat.batchRecordHeaderSize
        if headersLength > 0 {
            headers.wire.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: out[position..<(position + headersLength)]).copyMemory(from: source)
            }
            position += headersLength
        }
        let start = position
        payload.withUnsafeBytes { source in
            if source.count > 0 {
                UnsafeMutableRawBufferPointer(rebasing: out[start..<(start + source.count)]).copyMemory(from: source)
            }
        }
    }

    /// The bytes a record of `recordCount` bytes takes as a frame of its own (name of `nameLength`).
    @inlinable
    package static func frameBytes(ofBatchRecordCount recordCount: Int, nameLength: Int) -> Int {
        recordCount - WireFormat.batchRecordHeaderSize + nameLength + 1 + WireFormat.fixedHeaderSize
    }

    /// Writes the record `record` of the batch frame whose name and batch header are `header`
    /// (`batchHeaderBytes` of them) as a version 1 frame of its own into `out`, which must hold
    /// `frameBytes(ofBatchRecordCount:nameLength:)`: a run of one post goes as the frame it would
    /// have been had it not been written as a record. The record is trusted (this process's own).
    package static func writeFrame(
        ofBatchRecord record: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, nameLength: Int,
        into out: UnsafeMutableRawBufferPointer
    ) {
        typealias Fixed = WireFormat.FixedHeaderOffset
        typealias Batch = WireFormat.BatchHeaderOffset
        typealias Record = WireFormat.BatchRecordOffset
        let headerStart = nameLength + 1
        UnsafeMutableRawBufferPointer(rebasing: out[0..<headerStart])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: header[0..<headerStart]))
        out[headerStart + Fixed.version] = WireFormat.version
        out[headerStart + Fixed.flags] = record[Record.flags]
        out[headerStart + Fixed.contentType] = record[Record.contentType]
        out[headerStart + Fixed.nameLength] = UInt8(truncatingIfNeeded: nameLength)
        out[headerStart + Fixed.headersLength] = record[Record.headersLength]
        out[headerStart + Fixed.headersLength + 1] = record[Record.headersLength + 1]
        out[headerStart + Fixed.headerCount] = record[Record.headerCount]
        out[headerStart + Fixed.reserved] = 0
        UnsafeMutableRawBufferPointer(rebasing: out[(headerStart + Fixed.sequence)..<(headerStart + Fixed.sequence + 8)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: record[Record.sequence..<(Record.sequence + 8)]))
        UnsafeMutableRawBufferPointer(rebasing: out[(headerStart + Fixed.publisherID)..<(headerStart + Fixed.publisherID + 8)])
            .copyMemory(
                from: UnsafeRawBufferPointer(
                    rebasing: header[(headerStart + Batch.publisherID)..<(headerStart + Batch.publisherID + 8)]))
        UnsafeMutableRawBufferPointer(rebasing: out[(headerStart + Fixed.timestamp)..<(headerStart + Fixed.timestamp + 8)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: record[Record.timestamp..<(Record.timestamp + 8)]))
        let body = record.count - WireFormat.batchRecordHeaderSize
        if body > 0 {
            let start = headerStart + WireFormat.fixedHeaderSize
            UnsafeMutableRawBufferPointer(rebasing: out[start..<(start + body)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: record[WireFormat.batchRecordHeaderSize...]))
        }
    }
}
