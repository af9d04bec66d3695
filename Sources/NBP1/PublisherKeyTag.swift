/// With CURVE, a publisher's id carries its key (NBP-1 §15.3): the id's high 32 bits are the
/// first four bytes of the publisher's CURVE public key, the low 32 bits random (non-zero).
///
/// A broker admits a closed list of publisher keys, so it can tell, from a frame alone and with no
/// memory of earlier frames, that an id tagged with one listed key's bytes arriving from another
/// key's connection is forged: across its restarts and memory resets, on every path of a pair of
/// brokers, and after the publisher crashed. A broker that remembered owners only in memory let
/// the first connection after a restart take any id (issue 38, items 5 and 6).
package enum PublisherKeyTag {
    /// The tag of a 32-byte CURVE public key: its first four bytes, big-endian; nil for another size.
    package static func tag(ofPublicKey key: [UInt8]) -> UInt32? {
        guard key.count == 32 else { return nil }
        return key.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// The tag an id carries (its high 32 bits).
    package static func tag(of id: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: id >> 32) }

    /// `id` with its high 32 bits replaced by `tag`; its low 32 bits kept, or made 1 when zero.
    package static func id(_ id: UInt64, taggedWith tag: UInt32) -> UInt64 {
        let low = UInt64(UInt32(truncatingIfNeeded: id))
        return UInt64(tag) << 32 | (low == 0 ? 1 : low)
    }
}
