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
/// it a repeat is a no-op (NBP-1 §15.1). Bounded: the oldest is dropped past `capacity`.
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

    private struct Record {
        var frame: [UInt8]
        var firstSeen: UInt64
        var replays: Int
    }

    /// Keyed by the frame's name, sequence and publisher id fields.
    private var records: [[UInt8]: Record] = [:]
    /// When the next replay is due (monotonic ns), nil when nothing is kept.
    private(set) var nextReplay: UInt64?

    /// Keeps a copy when the held message is a single-frame end-of-stream record.
    mutating func remember(_ batch: borrowing MessageBatch, now: UInt64) {
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
        guard let key else { return }
        let frame = batch.withMessageBytes(at: 0) { Array($0) }
        if records[key] == nil, records.count >= Self.capacity,
            let oldest = records.min(by: { $0.value.firstSeen < $1.value.firstSeen })?.key
        {
            records[oldest] = nil
        }
        // Repeats of the same record (every 20 ms during a close) keep the first time seen.
        let firstSeen = records[key]?.firstSeen ?? now
        records[key] = Record(frame: frame, firstSeen: firstSeen, replays: records[key]?.replays ?? 0)
        updateNextReplay()
    }

    /// The frames due now; each is scheduled for its next replay, or forgotten after the last.
    mutating func takeDue(now: UInt64) -> [[UInt8]] {
        var due: [[UInt8]] = []
        for (key, record) in records where now >= record.firstSeen &+ Self.schedule[record.replays] {
            due.append(record.frame)
            if record.replays + 1 < Self.schedule.count {
                records[key]?.replays += 1
            } else {
                records[key] = nil
            }
        }
        updateNextReplay()
        return due
    }

    private mutating func updateNextReplay() {
        nextReplay = records.values.map { $0.firstSeen &+ Self.schedule[$0.replays] }.min()
    }
}
