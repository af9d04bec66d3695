import ZeroMQ

/// Counters of one subscription, by cause. Identity, once the subscription has ended:
/// `received == delivered + droppedLocalBuffer + discardedAtEnd`; while running the difference is buffered.
public struct SubscriptionStats: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Notifications whose name matched this subscription's pattern.
    public var received: UInt64 = 0
    /// Notifications handed to the consumer.
    public var delivered: UInt64 = 0
    /// Notifications inside this subscription's ZeroMQ prefix whose name did not match the pattern.
    public var filteredOut: UInt64 = 0
    /// Notifications of this subscription's streams that never reached it (sequence gaps, summed):
    /// lost before this process, or refused by this bus's limits (see `GapCause.lostUpstream`).
    public var lostUpstream: UInt64 = 0
    /// Notifications discarded by the bounded buffer.
    public var droppedLocalBuffer: UInt64 = 0
    /// Notifications still buffered when the subscription ended (cancelled, or the bus closed).
    public var discardedAtEnd: UInt64 = 0
    /// Gap events reported in-band.
    public var gaps: UInt64 = 0
    /// Notifications currently buffered.
    public var buffered: UInt64 = 0
    /// What the buffered notifications count against `BusConfiguration.subscriptionBufferBytes`
    /// (payload, headers and name, plus 64 bytes each).
    public var bufferedBytes: UInt64 = 0
    /// Typed subscriptions (`Bus.messages(of:)`, `addObserver(for:)`): of `delivered`, those whose
    /// payload did not decode as the message type (malformed or mistyped JSON, another content
    /// type, a name no member of a family has). Yielded as `.undecodable` by `messageEvents(of:)`.
    public var undecodable: UInt64 = 0

    /// Empty counters.
    public init() {}

    public var description: String {
        "received=\(received) delivered=\(delivered) filteredOut=\(filteredOut) lostUpstream=\(lostUpstream) "
            + "droppedLocalBuffer=\(droppedLocalBuffer) discardedAtEnd=\(discardedAtEnd) buffered=\(buffered)"
            + (undecodable > 0 ? " undecodable=\(undecodable)" : "")
    }
}
