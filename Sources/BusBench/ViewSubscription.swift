import Foundation
import NotificationBus

/// Which names a host's views subscribe to.
package enum ViewSubscription: String, Codable, Sendable, CaseIterable {
    /// View `i` subscribes to name `i % names` (one exact name each): the views scenario.
    case spread
    /// Every view subscribes to the first name only (exact): ZeroMQ filters every other name at
    /// the publisher, so their notifications never reach the host's socket.
    case one
    /// Every view subscribes to every name with one pattern (`bench.views.>`): all of them reach
    /// the host, and each view's code sees every notification.
    case all
}
