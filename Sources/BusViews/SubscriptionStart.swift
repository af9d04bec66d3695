/// Where a view's subscription starts when the view is made, beside `ReplayPolicy` (what it keeps
/// while the view is hidden).
public enum SubscriptionStart: Hashable, Sendable, CustomStringConvertible {
    /// With the next notification posted (SwiftUI's `onReceive`): nothing before the view existed.
    case now
    /// With the current value of every name the pattern matches (a retained value, NBP-1 §18,
    /// marked `BusNotification.isRetained`), then live ones: a view that appears shows the
    /// current state at once instead of waiting for the next change. Current values come from a
    /// broker that keeps them (`nbus broker --retain-names`), a publisher the bus is connected to
    /// straight (it keeps its own), or the bus itself when embedded.
    case retained

    public var description: String {
        switch self {
        case .now: return "now"
        case .retained: return "retained"
        }
    }
}
