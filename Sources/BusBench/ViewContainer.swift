import Foundation
import NotificationBus

/// What holds the scenario's views, and so what moves their visibility.
package enum ViewContainer: String, Codable, Sendable, CaseIterable {
    /// A stack: every view visible the whole time (churn does nothing).
    case none
    /// A `TabView` of `tabs` tabs, the views split across them; churn switches tab.
    case tabs
    /// A `LazyList` with one row per view and a window of `views / tabs` rows; churn scrolls by a window.
    case list
}
