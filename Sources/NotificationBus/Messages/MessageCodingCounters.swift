import Synchronization

/// How much JSON the typed API made and read: what proves the in-process path codes nothing,
/// by count, not by timing.
/// Also the typed layer's per-bus state that is not a counter: its Foundation bridges.
final class MessageCodingCounters: Sendable {
    let encoded = Atomic<UInt64>(0)
    let decoded = Atomic<UInt64>(0)
    /// Async message types bridged, by direction (`MessageBridges.swift`).
    let bridges = Mutex(BridgeRegistry())
    /// Main-actor messages being posted into a center by a bridge of this bus.
    let injections = BridgeInjections()
}

extension BusCore {
    func noteMessageEncoded() { messageCoding.encoded.add(1, ordering: .relaxed) }
    func noteMessageDecoded() { messageCoding.decoded.add(1, ordering: .relaxed) }
}

extension ObservationToken {
    /// What the observer's subscription selects (`await bus.ready(token.pattern)`).
    public var pattern: NamePattern { sequence.pattern }
}
