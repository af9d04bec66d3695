#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// The end-of-stream records the broker forwarded lately, to send again a few times.
///
/// A closing publisher repeats its record (NBP-1 §15) only until its close timeout, so a
/// subscriber that was stopped then (sent past as slow) resumes without it and cannot count the
/// tail it lost. The broker keeps each record (the last one per publisher stream and sequence)
/// and replays it 1, 3, 10, 30 and 60 s after it passed; for a subscriber that already applied
/// it a repeat is a no-op (NBP-1 §15.1). Bounded in count (`capacity`) and in bytes: a record
/// whose payload is over NBP-1's 64 KiB (a genuine publisher splits its names into records of at
/// most that) is forwarded but not kept, and past `byteLimit` the oldest are dropped, both
/// counted. Without the byte bounds a peer sending 960 KB records pinned some 360 MB here,
/// outside what `--max-memory` frees by dropping connections (issue 38, item 7).
/// Best effort: a replay goes past a subscriber libzmq still counts as full, and in tests a
/// resumed subscriber sometimes stayed so (its pipe not reactivated) and missed every replay.
/// Only records that passed `PublisherOwnership` are kept: the broker never replays a record it
/// did not see from that publisher's own connection. With the batch header of a frame sent past
/// a slow subscriber (counted in notifications) and every frame's publisher id (whose it is), the
/// places the broker looks into a frame: its name's `_nbus.eos.` prefix.
struct EndOfStreamReplay {
    private static let prefix = ControlNames.endOfStreamPrefix
    private static let schedule: [UInt64] = [1, 3, 10, 30, 60].map { $0 * 1_000_000_000 }
    private static let capacity = 4_096
    /// The largest frame kept: NBP-1's largest record payload (64 KiB), plus its name, fixed
    /// header and `final` header with room to spare.
    static let recordLimit = EndOfStream.maximumPayloadSize + 1_024
    /// The bytes of all records kept (256 records of the largest size; a usual record is a few
    /// names, well under 1 KiB).
    static let byteLimit = 16 << 20

    /// What `remember` did with a frame.
    enum Outcome: Equatable {
        /// Not an end-of-stream record (or a repeat of one kept): nothing to count.
        case notKept
        /// Kept, and `evicted` older records dropped to make room for it.
        case kept(evicted: Int)
        /// A record over `recordLimit`: forwarded, never replayed.
        case tooLarge
    }

    private struct Record {
        var frame: [UInt8]
        var firstSeen: UInt64
        var replays: Int
    }

    /// Keyed by the frame's name, sequence and publisher id fields.
    private var records: [[UInt8]: Record] = [:]
    /// When the next replay is due (monotonic ns), nil when nothing is kept.
    private(set) var nextReplay: UInt64?
    /// The frame bytes of the records kept (at most `byteLimit`).
    private(set) var heldBytes = 0

    /// Keeps a copy when the held message is a single-frame end-of-stream record within the bounds.
    mutating func remember(_ batch: borrowing MessageBatch, now: UInt64) -> Outcome {
        let key: [UInt8]? = batch.withMessageBytes(at: 0) { bytes in
            // Version 1 only: control frames are never batched (NBP-1 §2.3), so a `_nbus.eos.`
            // frame of another version is not a record, and its bytes are not read as one.
            guard bytes.count > Self.prefix.count, bytes.starts(with: Self.prefix),
                let nul = bytes.firstIndex(of: 0), bytes.count >= nul + 1 + WireFormat.fixedHeaderSize,
                bytes[nul + 1 + WireFormat.FixedHeaderOffset.version] == WireFormat.version
            else { return nil }
            // The name, then (after its NUL) the fixed header's sequence and publisher id fields
            // (a record with another id is another record).
            let sequence = nul + 1 + WireFormat.FixedHeaderOffset.sequence
            let publisher = nul + 1 + WireFormat.FixedHeaderOffset.publisherID
            return Array(bytes[0..<nul]) + Array(bytes[sequence..<(sequence + 8)]) + Array(bytes[publisher..<(publisher + 8)])
        }
        guard let key else { return .notKept }
        let size = batch.withMessageBytes(at: 0) { $0.count }
        guard size <= Self.recordLimit else { return .tooLarge }
        // Repeats of the same record (every 20 ms during a close) keep the first copy, its time
        // and its replays: they are the same record.
        guard records[key] == nil else { return .notKept }
        var evicted = 0
        while !records.isEmpty, records.count >= Self.capacity || heldBytes + size > Self.byteLimit,
            let oldest = records.min(by: { $0.value.firstSeen < $1.value.firstSeen })?.key
        {
            heldBytes -= records.removeValue(forKey: oldest)?.frame.count ?? 0
            evicted += 1
        }
        let frame = batch.withMessageBytes(at: 0) { Array($0) }
        records[key] = Record(frame: frame, firstSeen: now, replays: 0)
        heldBytes += frame.count
        updateNextReplay()
        return .kept(evicted: evicted)
    }

    /// The frames due now; each is scheduled for its next replay, or forgotten after the last.
    mutating func takeDue(now: UInt64) -> [[UInt8]] {
        var due: [[UInt8]] = []
        for (key, record) in records where now >= record.firstSeen &+ Self.schedule[record.replays] {
            due.append(record.frame)
            if record.replays + 1 < Self.schedule.count {
                records[key]?.replays += 1
            } else {
                heldBytes -= records.removeValue(forKey: key)?.frame.count ?? 0
            }
        }
        updateNextReplay()
        return due
    }

    private mutating func updateNextReplay() {
        nextReplay = records.values.map { $0.firstSeen &+ Self.schedule[$0.replays] }.min()
    }
}
