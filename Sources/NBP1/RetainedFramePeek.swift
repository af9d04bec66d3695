// What a keeper of retained values (NBP-1 §18) reads from a version 1 frame it keeps as it came:
// whether it clears the name's value, and its `retain-for`. Read in place, nothing copied.

extension EnvelopeCodec {
    /// A version 1 frame's retained-value fields, read without decoding.
    package struct RetainedFields: Equatable {
        /// The payload is empty: a retained post of it clears the name's value.
        package let clears: Bool
        /// The `retain-for` header as nanoseconds; nil when absent or not a valid number
        /// (`BusNotification.retainedLifetimeNanoseconds`'s rule).
        package let lifetimeNanoseconds: UInt64?
    }

    /// The retained-value fields of a version 1 frame whose name `nameLength(in:)` vouched for,
    /// after the same checks as `decode` (any payload size): nil when `decode` would reject it,
    /// so a keeper never keeps and hands out a frame its receivers would reject.
    package static func retainedFields(_ frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int) -> RetainedFields? {
        guard
            let layout = try? checkFrame(
                frame, validatedNameLength: nameCount, maximumPayload: Int.max, maximumHeaderCount: WireFormat.maximumHeaderCount)
        else { return nil }
        var lifetime: UInt64?
        var position = layout.mapStart
        let key = WireFormat.retainForHeader.utf8
        // The map was checked: every entry's lengths lie within it.
        for _ in 0..<layout.headerCount {
            let keyCount = Int(frame[position])
            let keyRange = (position + 1)..<(position + 1 + keyCount)
            position = keyRange.upperBound
            let valueCount = Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
            let valueRange = (position + 2)..<(position + 2 + valueCount)
            position = valueRange.upperBound
            if keyCount == key.count, UnsafeRawBufferPointer(rebasing: frame[keyRange]).elementsEqual(key) {
                lifetime = WireFormat.retainedLifetimeNanoseconds(UnsafeRawBufferPointer(rebasing: frame[valueRange]))
                break
            }
        }
        return RetainedFields(clears: layout.mapEnd == frame.count, lifetimeNanoseconds: lifetime)
    }
}

extension EnvelopeCodec {
    /// The retained records of a batch frame (name vouched for) that a keeper must apply, each as
    /// the version 1 frame that carries the same fields (written from the record's bytes, never
    /// decoded), in order: every clear (bit 0, empty payload), and of the retained values only
    /// those not followed by another value before the next clear or the end (a batch is one
    /// name's: a later value replaces an earlier one at once). nil when `decodeAll` would
    /// reject the batch.
    package static func retainedFramesToKeep(
        inBatch frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int
    ) -> [[UInt8]]? {
        var retained: [(start: Int, mapStart: Int, payloadEnd: Int, clears: Bool)] = []
        let publisherID: UInt64
        do {
            (publisherID, _) = try walkBatch(
                frame, validatedNameLength: nameCount, maximumPayload: 1 << 40, maximumHeaderCount: WireFormat.maximumHeaderCount
            ) { record in
                if frame[record.start + WireFormat.BatchRecordOffset.flags] & WireFormat.Flag.retain != 0 {
                    retained.append((record.start, record.mapStart, record.payloadEnd, record.payloadEnd == record.mapEnd))
                }
            }
        } catch {
            return nil
        }
        var frames: [[UInt8]] = []
        for (position, record) in retained.enumerated() {
            let nextIsValue = position + 1 < retained.count && !retained[position + 1].clears
            guard record.clears || !nextIsValue else { continue }
            frames.append(
                versionOneFrame(
                    ofRecordAt: record.start, mapStart: record.mapStart, payloadEnd: record.payloadEnd, in: frame,
                    nameLength: nameCount, publisherID: publisherID))
        }
        return frames
    }

    /// The version 1 frame (NBP-1 §2.1) of a checked batch record: name, the fixed header from
    /// the record's fields and the batch's publisher id, then the record's map and payload as they are.
    private static func versionOneFrame(
        ofRecordAt record: Int, mapStart: Int, payloadEnd: Int, in frame: UnsafeRawBufferPointer, nameLength: Int,
        publisherID: UInt64
    ) -> [UInt8] {
        typealias Record = WireFormat.BatchRecordOffset
        var out: [UInt8] = []
        out.reserveCapacity(nameLength + 1 + WireFormat.fixedHeaderSize + payloadEnd - mapStart)
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: frame[0..<nameLength]))
        out.append(0)
        out.append(WireFormat.version)
        out.append(frame[record + Record.flags])
        out.append(frame[record + Record.contentType])
        out.append(UInt8(nameLength))
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: frame[(record + Record.headersLength)..<(record + Record.headersLength + 2)]))
        out.append(frame[record + Record.headerCount])
        out.append(0)
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: frame[(record + Record.sequence)..<(record + Record.sequence + 8)]))
        withUnsafeBytes(of: publisherID.bigEndian) { out.append(contentsOf: $0) }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: frame[(record + Record.timestamp)..<(record + Record.timestamp + 8)]))
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: frame[mapStart..<payloadEnd]))
        return out
    }
}

extension WireFormat {
    /// A `retain-for` value (decimal milliseconds, 1 to 2^53) as nanoseconds; nil for anything
    /// else (NBP-1 §18).
    package static func retainedLifetimeNanoseconds(_ text: some Collection<UInt8>) -> UInt64? {
        let largest = UInt64(1) << 53
        guard !text.isEmpty else { return nil }
        var milliseconds: UInt64 = 0
        for byte in text {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            milliseconds = milliseconds * 10 + UInt64(byte - UInt8(ascii: "0"))
            guard milliseconds <= largest else { return nil }
        }
        guard milliseconds >= 1 else { return nil }
        return milliseconds * 1_000_000
    }
}
