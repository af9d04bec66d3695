import Synchronization

/// How much JSON the typed API made and read: what proves the in-process path codes nothing,
/// by count, not by timing.
final class MessageCodingCounters: Sendable {
    let encoded = Atomic<UInt64>(0)
    let decoded = Atomic<UInt64>(0)
}

extension BusCore {
    func noteMessageEncoded() { messageCoding.encoded.add(1, ordering: .relaxed) }
    func noteMessageDecoded() { messageCoding.decoded.add(1, ordering: .relaxed) }
}

extension ObservationToken {
    /// What the observer's subscription selects (`await bus.ready(token.pattern)`).
    public var pattern: NamePattern { sequence.pattern }
}
