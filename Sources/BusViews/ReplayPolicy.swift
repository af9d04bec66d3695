/// What a task-style consumer's subscription keeps while its view is hidden, to deliver on reappear.
///
/// The subscription lives as long as the view exists; whatever it does not keep is counted as
/// `missedWhileHidden` and reported in-band as a `.missedWhileInactive` gap on reappear.
public enum ReplayPolicy: Hashable, Sendable, CustomStringConvertible {
    /// Keep nothing (SwiftUI's behaviour), but count every miss.
    case none
    /// Keep the latest notification per name; the ones it supersedes are counted as missed.
    case latest
    /// Keep up to `max` notifications in arrival order; older ones beyond it are counted as missed.
    case all(max: Int)

    public var description: String {
        switch self {
        case .none: return "none"
        case .latest: return "latest"
        case .all(let max): return "all(max: \(max))"
        }
    }
}
