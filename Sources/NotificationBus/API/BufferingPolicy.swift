import Logging

/// What a subscription does when its consumer falls behind and its buffer is full.
public enum BufferingPolicy: Hashable, Sendable {
    /// Discard the oldest buffered notification; the loss is counted and reported in-band as a gap.
    case dropOldest(capacity: Int)
    /// Discard the arriving notification; counted and reported in-band as a gap.
    case dropNewest(capacity: Int)
    /// Stop reading the bus's socket until the consumer catches up, so the back-pressure moves to
    /// ZeroMQ's high-water marks (where any loss shows up as an upstream sequence gap). It pauses
    /// every subscription of this bus, like a full pipe would. Reading resumes once the consumer
    /// has taken 256 notifications (an eighth of a smaller capacity), and a read takes no more
    /// than the room left, so the socket goes unread for at most about two consumer batches of
    /// the consumer's work, however slow it is.
    case suspendProducer(capacity: Int)

    /// The default: `.suspendProducer(capacity: 8192)`, lossless inside the process.
    public static let `default` = BufferingPolicy.suspendProducer(capacity: 8192)

    /// The bound on buffered notifications.
    public var capacity: Int {
        switch self {
        case .dropOldest(let capacity), .dropNewest(let capacity), .suspendProducer(let capacity):
            return max(1, capacity)
        }
    }
}
