import ZeroMQ

/// One element of `Bus.events(named:)`: a notification, or a gap where notifications were lost.
public enum BusEvent: Hashable, Sendable {
    /// A delivered notification.
    case notification(BusNotification)
    /// Notifications lost at this point of the stream.
    case gap(Gap)
}
