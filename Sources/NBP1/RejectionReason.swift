/// Why a received message was dropped, named exactly as in `protocol/NBP-1.md`.
///
/// An enum, not a struct with static members like `BusError`, decided before 0.1.0: it is the
/// wire protocol's own list. NBP/1 §7.4 gives exactly these names (the raw values, used for
/// counters, logs and `/metrics` labels) and §7.1 the order the checks run in; every receiver,
/// in any language, reports the same reason for the same bytes. `CaseIterable` is what lets a
/// receiver keep one counter per reason and show every reason, zero or not. A reason is added
/// only with the spec's text (before 0.1.0, while NBP/1 is settled; after it, as a protocol
/// change in a breaking version), and a caller's exhaustive `switch` breaking then is the point:
/// there is one more reason to count.
public enum RejectionReason: String, Error, CaseIterable, Sendable, Comparable, CustomStringConvertible {
    /// The message had more or fewer than one ZeroMQ frame.
    case wrongFrameCount
    /// No NUL within the first 256 bytes: the name has no terminator or exceeds 255 bytes.
    case missingNameTerminator
    /// The name, a header key or a header value is not valid UTF-8.
    case invalidUTF8
    /// The name breaks the name rules (empty token, forbidden byte, wildcard).
    case invalidName
    /// The frame ends inside the fixed header or the header map.
    case truncatedHeader
    /// The version byte is neither 1 (one notification) nor 2 (a batch).
    case unsupportedVersion
    /// The header's name length differs from the name before the NUL.
    case nameLengthMismatch
    /// Too many headers, too large a map, key or value.
    case headerLimitExceeded
    /// The header map's structure is wrong (empty or duplicate key, NUL in a key, length mismatch).
    case headerMapInvalid
    /// The payload is larger than this receiver's maximum, or a batch frame is larger than the
    /// largest batch it accepts (`WireFormat.batchFrameLimit(maximumPayload:)`).
    case payloadTooLarge
    /// A batch frame breaks the rules of batches (NBP-1 §2.3, §7.5): it carries a control name
    /// (control messages are never batched), declares a record count of 0 or over 1024, or has
    /// bytes left after the last record.
    case batchInvalid

    public var description: String { rawValue }

    public static func < (lhs: RejectionReason, rhs: RejectionReason) -> Bool { lhs.rawValue < rhs.rawValue }
}
