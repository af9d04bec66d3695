/// One change to the retained values as `RetainedLog` writes it: `[length u32][crc32 u32][payload]`
/// (little-endian; the length and CRC-32 are the payload's), the payload `[op u8][name length
/// u16][name][expiry u64][frame]`: op 1 sets the name's value to the frame (kept as received),
/// op 2 clears it (no frame). The expiry is absolute wall-clock nanoseconds (0: never), so a
/// value keeps its `retain-for` across a restart, however long the broker was down.
struct RetainedLogRecord: Equatable {
    enum Operation: UInt8 {
        case set = 1
        case clear = 2
    }

    var operation: Operation
    var name: [UInt8]
    /// Wall-clock nanoseconds when the value expires; 0: never.
    var expiry: UInt64
    var frame: [UInt8]

    /// The header before a record's payload: its length and its CRC-32.
    static let headerSize = 8
    /// The payload's fixed part: op, name length, expiry.
    static let fixedPayloadSize = 1 + 2 + 8
    /// The longest payload accepted when reading (1 GiB): a length beyond it is damage.
    static let maximumPayload = 1 << 30
    /// The file's first bytes, naming its format (a file without them is not this log).
    static let fileMagic: [UInt8] = Array("nbus-retained-log-1\n".utf8)

    /// The record's bytes, header included, appended to `bytes`.
    func encode(into bytes: inout [UInt8]) {
        let payloadCount = Self.fixedPayloadSize + name.count + frame.count
        let start = bytes.count
        bytes.reserveCapacity(start + Self.headerSize + payloadCount)
        Self.append(UInt32(truncatingIfNeeded: payloadCount), to: &bytes)
        Self.append(UInt32(0), to: &bytes)  // the CRC, written below
        bytes.append(operation.rawValue)
        bytes.append(UInt8(truncatingIfNeeded: name.count))
        bytes.append(UInt8(truncatingIfNeeded: name.count >> 8))
        Self.append(expiry, to: &bytes)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: frame)
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + Self.headerSize)...])) }
        for index in 0..<4 { bytes[start + 4 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
    }

    var encoded: [UInt8] {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        return bytes
    }

    /// What reading a log's bytes found: the records up to the first damage, and where the good
    /// part ends (the offset of the damage, or the end).
    struct Replay: Equatable {
        var records: [RetainedLogRecord]
        /// The bytes up to here are whole, checked records (and the magic).
        var goodLength: Int
        /// Whether something after `goodLength` was not a whole, checked record.
        var damaged: Bool { goodLength < totalLength }
        var totalLength: Int
    }

    /// Reads `bytes` (a whole log, its magic first) up to its end or the first record that is
    /// short, fails its CRC or does not parse. A file that does not start with the magic has no
    /// good part (0).
    static func decode(_ bytes: UnsafeRawBufferPointer) -> Replay {
        var replay = Replay(records: [], goodLength: 0, totalLength: bytes.count)
        guard bytes.count >= fileMagic.count, bytes.prefix(fileMagic.count).elementsEqual(fileMagic) else {
            // An empty file is an empty log, not damage (goodLength 0 of 0); anything else is not
            // this log: none of it is good.
            return replay
        }
        var offset = fileMagic.count
        replay.goodLength = offset
        while offset < bytes.count {
            guard bytes.count - offset >= headerSize else { break }
            let length = Int(readUInt32(bytes, at: offset))
            let crc = readUInt32(bytes, at: offset + 4)
            guard length >= fixedPayloadSize, length <= maximumPayload, bytes.count - offset - headerSize >= length else { break }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + headerSize)..<(offset + headerSize + length)])
            guard CRC32.checksum(payload) == crc, let record = parse(payload) else { break }
            replay.records.append(record)
            offset += headerSize + length
            replay.goodLength = offset
        }
        return replay
    }

    private static func parse(_ payload: UnsafeRawBufferPointer) -> RetainedLogRecord? {
        guard let operation = Operation(rawValue: payload[0]) else { return nil }
        let nameCount = Int(payload[1]) | Int(payload[2]) << 8
        guard nameCount > 0, payload.count - fixedPayloadSize >= nameCount else { return nil }
        var expiry: UInt64 = 0
        for index in 0..<8 { expiry |= UInt64(payload[3 + index]) << (8 * index) }
        let name = [UInt8](payload[fixedPayloadSize..<(fixedPayloadSize + nameCount)])
        let frame = [UInt8](payload[(fixedPayloadSize + nameCount)...])
        switch operation {
        case .set: guard !frame.isEmpty else { return nil }
        case .clear: guard frame.isEmpty else { return nil }
        }
        return RetainedLogRecord(operation: operation, name: name, expiry: expiry, frame: frame)
    }

    private static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * index) }
        return value
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        for index in 0..<(T.bitWidth / 8) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }
}

/// CRC-32 (IEEE 802.3, the one zlib and gzip use), table-driven.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return ~crc
    }
}
