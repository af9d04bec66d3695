import Foundation
import NotificationBus

/// The message `nbus bench views --typed` posts: the scenario's notification as a message type
/// (issue 42, item 7). Its subject is the name's last token, so `post(_:subject:)` posts under
/// the scenario's own names (`bench.views.n007`) and each view subscribes as before.
package struct ViewsBenchMessage: BusAsyncMessage, Equatable {
    package typealias Subject = ViewsBenchName
    package static let busName: NotificationName = "bench.views"
    /// Whether it passes the views' condition (the byte scenario's first payload byte).
    package var match: Bool
    /// Padding, so the JSON is about the scenario's `size`.
    package var pad: String

    package init(match: Bool, pad: String) {
        self.match = match
        self.pad = pad
    }

    /// The padding that makes the JSON (`{"match":false,"pad":"..."}`, 24 bytes without it)
    /// about `size` bytes.
    package static func pad(size: Int) -> String { String(repeating: "x", count: max(0, size - 24)) }
}

/// A scenario name's last token (`n007`), the subject of a `ViewsBenchMessage` (a class, as
/// Foundation wants of a subject).
package final class ViewsBenchName: BusSubject, Sendable {
    package let busSubjectID: String

    /// The subject of the scenario's `index`-th name.
    package init(_ scenario: ViewsScenario, index: Int) {
        busSubjectID = String(scenario.notificationName(index).dropFirst("bench.views.".count))
    }
}
