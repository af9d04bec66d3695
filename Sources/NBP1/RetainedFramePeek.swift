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
        var frames: [[UInt8]] = []
        var scratch: [UInt8] = []
        let valid = forEachRetainedFrameToKeep(inBatch: frame, validatedNameLength: nameCount, scratch: &scratch) {
            frames.append(Array($0))
        }
        return valid ? frames : nil
    }

    /// `retainedFramesToKeep`'s frames, each written into `scratch` (its capacity reused from one
    /// call to the next) and handed to `body` in order, nothing else allocated unless the batch
    /// holds a clear: the broker's path for every retained batch. False (and `body` never
    /// called) when `decodeAll` would reject the batch.
    package static func forEachRetainedFrameToKeep(
        inBatch frame: UnsafeRawBufferPointer, validatedNameLength nameCount: Int, scratch: inout [UInt8],
        _ body: (UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        typealias Kept = (start: Int, mapStart: Int, payloadEnd: Int)
        // The last value since the last clear (replaced by each later value), and, only when a
        // batch holds clears, the records before the last clear that are kept, in order.
        var pending: Kept?
        var beforeLastClear: [Kept] = []
        let publisherID: UInt64
        do {
            (publisherID, _) = try walkBatch(
                frame, validatedNameLength: nameCount, maximumPayload: 1 << 40, maximumHeaderCount: WireFormat.maximumHeaderCount
            ) { record in
                guard frame[record.start + WireFormat.BatchRecordOffset.flags] & WireFormat.Flag.retain != 0 else { return }
                let kept = (record.start, record.mapStart, record.payloadEnd)
                if record.payloadEnd == record.mapEnd {
                    if let value = pending { beforeLastClear.append(value) }
                    beforeLastClear.append(kept)
                    pending = nil
                } else {
                    pending = kept
                }
            }
        } catch {
            return false
        }
        func emit(_ record: Kept) {
            scratch.removeAll(keepingCapacity: true)
            appendVersionOneFrame(
                ofRecordAt: record.start, mapStart: record.mapStart, payloadEnd: record.payloadEnd, in: frame,
                nameLength: nameCount, publisherID: publisherID, to: &scratch)
            scratch.withUnsafeBytes { body($0) }
        }
        for record in beforeLastClear { emit(record) }
        if let pending { emit(pending) }
        return true
    }

    /// Appends the version 1 frame (NBP-1 §2.1) of a checked batch record to `out`: name, the
    /// fixed header from the record's fields and the batch's publisher id, then the record's map
    /// and payload as they are.
    private static func appendVersionOneFrame(
        ofRecordAt record: Int, mapStart: Int, payloadEnd: Int, in frame: UnsafeRawBufferPointer, nameLength: Int,
        publisherID: UInt64, to out: inout [UInt8]
    ) {
        typealias Record = WireFormat.BatchRecordOffset
        out.reserveCapacity(out.count + nameLength + 1 + WireFormat.fixedHeaderSize + payloadEnd - mapStart)
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
