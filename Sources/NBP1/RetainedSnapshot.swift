// A retained snapshot (NBP-1 §18): how a new subscription asks for the kept values its pattern
// matches, and the frames that bring them. Pure functions over bytes.

/// The names, topics and payload layout of retained snapshots.
///
/// A subscriber subscribes the exact name `_nbus.retained.<bus hex>.<n>` (its reply name), then
/// the topic `\0nbus.retained.<bus hex>.<n>.<pattern>` (its request). A broker that reads the
/// request from its XPUB has applied the reply name's subscription for that connection (one
/// pipe's subscriptions are read in order), so what it sends under the reply name reaches that
/// subscriber alone: no other subscriber gets the values again.
package enum RetainedSnapshot {
    /// Every reply name starts with this.
    package static let replyPrefix = Array("_nbus.retained.".utf8)
    /// Every request topic starts with this (NUL first: it never matches a notification).
    package static let requestPrefix = Array("\u{0}nbus.retained.".utf8)
    /// The most entry bytes one snapshot frame carries (one larger entry goes alone).
    package static let chunkBytes = 64 * 1024
    /// Header on the last frame of a snapshot: "1".
    package static let finalHeader = "final"
    /// Header on the last frame: how many notifications the whole snapshot carried.
    package static let countHeader = "count"
    /// Header on the last frame: "1" when the sender takes every publisher's notifications
    /// (a broker keeping retained values), so the subscription is live at every publisher it
    /// reaches; "0" otherwise.
    package static let takesAllHeader = "takes-all"

    /// `_nbus.retained.<bus hex>.<token>`.
    package static func replyName(bus: UInt64, token: UInt64) -> String {
        String(decoding: replyPrefix, as: UTF8.self) + ControlNames.hex(bus) + "." + String(token)
    }

    /// `\0nbus.retained.<bus hex>.<token>.<pattern>`.
    package static func requestTopic(bus: UInt64, token: UInt64, pattern: NamePattern) -> [UInt8] {
        requestPrefix + Array("\(ControlNames.hex(bus)).\(token).\(pattern.rawValue)".utf8)
    }

    /// A request topic's reply name and pattern; nil for anything malformed (a peer's bytes).
    package static func parseRequest(_ topic: some Collection<UInt8>) -> (replyName: NotificationName, pattern: NamePattern)? {
        guard topic.starts(with: requestPrefix) else { return nil }
        let rest = Array(topic.dropFirst(requestPrefix.count))
        guard rest.count > 17, rest[16] == UInt8(ascii: "."), let bus = ControlNames.parseHex(rest[0..<16]) else { return nil }
        let afterBus = rest[17...]
        guard let dot = afterBus.firstIndex(of: UInt8(ascii: ".")), dot > afterBus.startIndex,
            let token = UInt64(String(decoding: afterBus[afterBus.startIndex..<dot], as: UTF8.self))
        else { return nil }
        let patternText = String(decoding: afterBus[(dot + 1)...], as: UTF8.self)
        // A request whose pattern or name is not valid is no request (NBP-1 §18): nil.
        guard let pattern = try? NamePattern(patternText),
            let reply = try? NotificationName(replyName(bus: bus, token: token))
        else { return nil }
        return (reply, pattern)
    }

    /// The payloads of a snapshot's frames: each entry a u32 big-endian length and one version 1
    /// frame, at most `chunkBytes` of entries a frame (an entry larger than that goes alone);
    /// always at least one payload (an empty snapshot is one empty frame).
    package static func payloads(entries: [[UInt8]], chunkBytes: Int = chunkBytes) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        var current: [UInt8] = []
        for entry in entries {
            if !current.isEmpty, current.count + 4 + entry.count > chunkBytes {
                payloads.append(current)
                current = []
            }
            let length = UInt32(clamping: entry.count).bigEndian
            withUnsafeBytes(of: length) { current.append(contentsOf: $0) }
            current.append(contentsOf: entry)
        }
        payloads.append(current)
        return payloads
    }

    /// A snapshot payload's entries (each one frame), or nil when its lengths do not fill it
    /// exactly.
    package static func entries(in payload: [UInt8]) -> [ArraySlice<UInt8>]? {
        var entries: [ArraySlice<UInt8>] = []
        var position = 0
        while position < payload.count {
            guard payload.count - position >= 4 else { return nil }
            let length =
                Int(payload[position]) << 24 | Int(payload[position + 1]) << 16 | Int(payload[position + 2]) << 8
                | Int(payload[position + 3])
            position += 4
            guard payload.count - position >= length else { return nil }
            entries.append(payload[position..<(position + length)])
            position += length
        }
        return entries
    }

    /// Whether a frame (version 1, or a batch's records) carries a notification with the retain
    /// bit, read without decoding; false for anything too short to say. For a broker that
    /// looks at every frame it forwards: one byte for a single notification.
    package static func carriesRetain(_ frame: UnsafeRawBufferPointer, nameLength: Int) -> Bool {
        let start = nameLength + 1
        guard nameLength > 0, frame.count > start + WireFormat.FixedHeaderOffset.flags else { return false }
        if frame[start] == WireFormat.version {
            return frame[start + WireFormat.FixedHeaderOffset.flags] & WireFormat.Flag.retain != 0
        }
        guard frame[start] == WireFormat.batchVersion, frame.count >= start + WireFormat.batchHeaderSize else { return false }
        typealias Record = WireFormat.BatchRecordOffset
        let recordCount = Int(frame[start + WireFormat.BatchHeaderOffset.recordCount]) << 8
            | Int(frame[start + WireFormat.BatchHeaderOffset.recordCount + 1])
        var position = start + WireFormat.batchHeaderSize
        for _ in 0..<recordCount {
            guard frame.count - position >= WireFormat.batchRecordHeaderSize else { return false }
            if frame[position + Record.flags] & WireFormat.Flag.retain != 0 { return true }
            let headers = Int(frame[position + Record.headersLength]) << 8 | Int(frame[position + Record.headersLength + 1])
            var payload = 0
            for offset in 0..<4 { payload = payload << 8 | Int(frame[position + Record.payloadLength + offset]) }
            position += WireFormat.batchRecordHeaderSize + headers + payload
        }
        return false
    }
}
