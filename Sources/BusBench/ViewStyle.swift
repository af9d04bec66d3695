import Foundation
import NotificationBus

/// One consumer style of the views benchmark: how a view consumes the scenario's notifications.
package enum ViewStyle: String, Codable, Sendable, CaseIterable {
    /// `.onReceive(pattern) { n in if match { state = ... } }`: subscribed while the view exists,
    /// every notification runs the action on the main actor and re-evaluates `body`.
    case onReceive = "onReceive"
    /// `.task(subscribing:) { feed in for await ... }` with the closure written in `body`: the
    /// loop runs on the main actor; only matching notifications write state.
    case taskMain = "task-main"
    /// The same loop in a `nonisolated` handler declared outside `body`: it runs off the main
    /// actor and hops to it only to write state (`await $state.set(...)`) for matches.
    case taskOffMain = "task-off-main"
    /// The off-main loop with `replay: .all(max:)`: what arrives while the view is hidden is kept
    /// (up to the bound) and handed to the next run on reappear.
    case taskReplay = "task-replay"

    /// A short column title.
    package var title: String {
        switch self {
        case .onReceive: return "onReceive"
        case .taskMain: return "task (main)"
        case .taskOffMain: return "task (off-main)"
        case .taskReplay: return "task replay .all"
        }
    }

    /// How its line is drawn in the report's charts (SVG `stroke-dasharray`; nil: solid). The
    /// task styles often deliver alike, so their lines lie on one another: drawn later and with
    /// gaps, each leaves the one under it showing.
    package var dashPattern: String? {
        switch self {
        case .onReceive, .taskMain: return nil
        case .taskOffMain: return "8 4"
        case .taskReplay: return "2 3"
        }
    }

    /// Whether the style is a task-style (visibility-bound) consumer.
    package var isTask: Bool { self != .onReceive }

    /// Plain `task` styles: SwiftUI's behaviour, nothing kept while hidden.
    package var isPlainTask: Bool { self == .taskMain || self == .taskOffMain }
}
