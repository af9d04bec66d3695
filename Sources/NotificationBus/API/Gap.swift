import ZeroMQ

/// Why notifications a subscription should have seen never reached its consumer.
public enum GapCause: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// A sequence gap per (publisher, name): dropped at a ZeroMQ high-water mark or during a
    /// reconnect, or refused by this bus's own limits (`maximumPayload`, `maximumHeaderCount`;
    /// also counted by reason in `BusStats.rejected`), since either way it never reached a consumer.
    case lostUpstream
    /// Discarded by this subscription's own bounded buffer (`dropOldest`/`dropNewest`).
    case droppedLocalBuffer
    /// Posted while a visibility-bound consumer was not running (reported by BusViews).
    case missedWhileInactive

    public var description: String { rawValue }
}

/// A run of notifications that were lost, reported in-band where the loss happened.
public struct Gap: Hashable, Sendable, CustomStringConvertible {
    /// Why they were lost.
    public var cause: GapCause
    /// How many were lost.
    public var count: UInt64
    /// The name, when the loss is of one (publisher, name) stream (upstream gaps).
    public var name: NotificationName?
    /// The publisher, for upstream gaps.
    public var publisherID: UInt64?
    /// The missing sequence numbers, for upstream gaps.
    public var sequences: ClosedRange<UInt64>?

    /// Creates a gap record.
    public init(
        cause: GapCause, count: UInt64, name: NotificationName? = nil, publisherID: UInt64? = nil,
        sequences: ClosedRange<UInt64>? = nil
    ) {
        self.cause = cause
        self.count = count
        self.name = name
        self.publisherID = publisherID
        self.sequences = sequences
    }

    public var description: String {
        var text = "gap(\(cause), \(count)"
        if let name { text += ", \(name)" }
        if let sequences { text += ", seq \(sequences.lowerBound)...\(sequences.upperBound)" }
        return text + ")"
    }
}
