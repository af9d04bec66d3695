import Foundation
import NotificationBus

/// One subscriber host of a scenario run: its style and which names its views subscribe to.
struct ScenarioHostSpec: Sendable, Equatable {
    var style: ViewStyle
    var subscription: ViewSubscription

    /// How the host is named in messages.
    var label: String {
        subscription == .spread
            ? "views host \(style.rawValue) (views-worker host)"
            : "views host \(style.rawValue), subscribed to \(subscription.rawValue) (views-worker host)"
    }
}
