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

    /// Whether the style is a task-style (visibility-bound) consumer.
    package var isTask: Bool { self != .onReceive }

    /// Plain `task` styles: SwiftUI's behaviour, nothing kept while hidden.
    package var isPlainTask: Bool { self == .taskMain || self == .taskOffMain }
}

/// What holds the scenario's views, and so what moves their visibility.
package enum ViewContainer: String, Codable, Sendable, CaseIterable {
    /// A stack: every view visible the whole time (churn does nothing).
    case none
    /// A `TabView` of `tabs` tabs, the views split across them; churn switches tab.
    case tabs
    /// A `LazyList` with one row per view and a window of `views / tabs` rows; churn scrolls by a window.
    case list
}

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

/// One scenario of `nbus bench views`: a publisher process, and one subscriber-host process per
/// style, each hosting the same views on the same stream.
///
/// The publisher posts round-robin over `names` names (`bench.views.n000`...); view `i`
/// subscribes to name `i % names`. A notification *matches* (passes the views' condition) when
/// its first payload byte is 1; the publisher sets it for exactly `selectivity` of each name's
/// notifications (deterministically: the `j`-th notification of a name matches when
/// `floor((j+1)s) > floor(js)`).
package struct ViewsScenario: Codable, Sendable, Equatable {
    /// ipc (a fresh temp folder) or tcp (127.0.0.1, a free port).
    package var transport = ThroughputOptions.Transport.ipc
    /// Notifications per second over all names; nil posts as fast as `post` returns.
    package var rate: Int? = 20_000
    /// Payload bytes (at least 1: the first byte says whether the notification matches).
    package var size = 64
    /// Names the publisher posts round-robin to.
    package var names = 30
    /// The fraction of each name's notifications that pass the views' condition, 0...1.
    package var selectivity = 0.1
    /// Views per subscriber host.
    package var views = 30
    /// Which names the views subscribe to (`nbus bench filter` runs `one` against `all`).
    package var subscription = ViewSubscription.spread
    /// What holds the views.
    package var container = ViewContainer.tabs
    /// Tabs (or list pages: the list window is `views / tabs` rows).
    package var tabs = 3
    /// Visibility churn: a tab switch or a scroll every this many ms; 0: none.
    package var churnMilliseconds = 250
    /// The busy work of each `body` evaluation, microseconds.
    package var bodyMicroseconds = 20
    /// The run ends after this many notifications ...
    package var count = 1_000_000
    /// ... or this many seconds of posting, whichever comes first.
    package var seconds = 10.0
    /// The bound of the replay style's `replay: .all(max:)`.
    package var replayMax = 4_096
    /// Each view's subscription buffer (`.suspendProducer(capacity:)`), notifications.
    package var buffer = 8_192
    /// ZeroMQ send and receive high-water marks, every process.
    package var highWaterMark: Int32 = 10_000
    /// Publisher back-pressure (`ZMQ_XPUB_NODROP`): lossless, but the slowest host paces everyone.
    /// Off by default: the publisher's XPUB drops for a host that falls behind, which that host
    /// reports as upstream loss.
    package var backpressure = false
    /// The styles to run, one subscriber-host process each.
    package var styles: [ViewStyle] = ViewStyle.allCases
    /// Run one style at a time (its own publisher run each) instead of all side by side on one
    /// stream: less CPU contention on a small machine, at the price of different streams.
    package var oneAtATime = false
    /// Seconds the hosts may take to drain after the publisher is done, before they report anyway.
    package var drainSeconds = 60
    /// Seconds without any counter moving, while draining, after which a host reports anyway.
    package var stallSeconds = 5
    /// Seconds the children may take to start and subscribe.
    package var startupSeconds = 30
    /// Each host samples its main actor's responsiveness (a job every 20 ms). `nbus bench filter`
    /// turns it off: it reports no responsiveness, and the sampler's own wake-ups would count in
    /// the CPU time it compares.
    package var pingMainActor = true

    /// The default scenario (the demo's, 10 s long).
    package init() {}

    /// The name prefix every notification of the benchmark has.
    package static let namePrefix = "bench.views.n"

    /// The `index`-th name, zero-padded so that no name is a prefix of another.
    package func notificationName(_ index: Int) -> String {
        let width = max(3, String(max(0, names - 1)).count)
        let digits = String(index)
        return Self.namePrefix + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// The name index view `view` subscribes to (the first one, for `.all`).
    package func nameIndex(ofView view: Int) -> Int { subscription == .spread ? view % max(1, names) : 0 }

    /// The name indexes view `view` subscribes to, ascending.
    package func nameIndexes(ofView view: Int) -> [Int] {
        switch subscription {
        case .spread: return [view % max(1, names)]
        case .one: return [0]
        case .all: return Array(0..<names)
        }
    }

    /// The pattern view `view` subscribes with: its name exactly, or `bench.views.>` for `.all`.
    package func pattern(ofView view: Int) throws -> NamePattern {
        if subscription == .all { return try NamePattern(Self.allNamesPattern) }
        return NamePattern(exactly: try NotificationName(notificationName(nameIndex(ofView: view))))
    }

    /// The pattern that covers every name of the benchmark.
    package static let allNamesPattern = "bench.views.>"

    /// Name indexes some view subscribes to, ascending.
    package var subscribedNameIndexes: [Int] {
        switch subscription {
        case .spread: return Array(Set((0..<views).map(nameIndex(ofView:)))).sorted()
        case .one: return [0]
        case .all: return Array(0..<names)
        }
    }

    /// Selectivity in parts per million (exact integer arithmetic for the match rule).
    var selectivityPPM: Int { Int((min(1, max(0, selectivity)) * 1_000_000).rounded()) }

    /// Whether the `perName`-th (0-based) notification of a name matches.
    package func matches(perNameIndex index: Int) -> Bool {
        let ppm = selectivityPPM
        return ((index + 1) * ppm) / 1_000_000 > (index * ppm) / 1_000_000
    }

    /// Pages: the tabs, or the list's windows; one page for `none`.
    package var pageCount: Int {
        switch container {
        case .none: return 1
        case .tabs, .list: return max(1, min(tabs, views))
        }
    }

    /// Views per page (the last page may have fewer).
    package var viewsPerPage: Int { (views + pageCount - 1) / max(1, pageCount) }

    /// The page view `view` is on.
    package func page(ofView view: Int) -> Int { container == .none ? 0 : view / max(1, viewsPerPage) }

    /// The views on `page`.
    package func views(onPage page: Int) -> Range<Int> {
        guard container != .none else { return 0..<views }
        let start = min(views, page * viewsPerPage)
        return start..<min(views, start + viewsPerPage)
    }

    /// Whether visibility moves during the run.
    package var hasChurn: Bool { container != .none && churnMilliseconds > 0 && pageCount > 1 }

    /// Checks the values; throws `.invalidOptions` with what is wrong.
    package func validate() throws(BenchError) {
        if let rate, rate < 1 { throw .invalidOptions("--rate must be at least 1 (or max)") }
        guard (1...WireFormat.defaultMaximumPayload).contains(size) else {
            throw .invalidOptions("--size must be 1...\(WireFormat.defaultMaximumPayload) (the first byte says whether it matches)")
        }
        guard (1...10_000).contains(names) else { throw .invalidOptions("--names must be 1...10000") }
        guard (0...1).contains(selectivity) else { throw .invalidOptions("--selectivity must be 0...1") }
        guard (1...10_000).contains(views) else { throw .invalidOptions("--views must be 1...10000") }
        guard tabs >= 1 else { throw .invalidOptions("--tabs must be at least 1") }
        guard churnMilliseconds >= 0 else { throw .invalidOptions("--churn-interval must be >= 0") }
        guard bodyMicroseconds >= 0 else { throw .invalidOptions("--body-time must be >= 0") }
        guard count >= 1 else { throw .invalidOptions("--count must be at least 1") }
        guard seconds > 0 else { throw .invalidOptions("--seconds must be positive") }
        guard replayMax >= 1 else { throw .invalidOptions("--replay-max must be at least 1") }
        guard buffer >= 1 else { throw .invalidOptions("--buffer must be at least 1") }
        guard highWaterMark >= 0 else { throw .invalidOptions("--hwm must be >= 0 (0: unbounded)") }
        guard !styles.isEmpty else { throw .invalidOptions("--styles must name at least one style") }
        guard Set(styles).count == styles.count else { throw .invalidOptions("--styles names a style twice") }
        guard drainSeconds >= 1, stallSeconds >= 1, startupSeconds >= 1 else {
            throw .invalidOptions("the drain, stall and startup timeouts must be at least 1 second")
        }
    }

    /// One line describing the scenario.
    package var summary: String { summary(posted: nil) }

    /// The summary of a run that posted `posted` notifications: it says how many were posted,
    /// not only the cap (the demo's header said "up to 1,120,000 msgs" where 559,999 were).
    package func summary(posted: UInt64?) -> String {
        let rateText = rate.map { "\(Format.count($0)) msg/s" } ?? "max rate"
        var text = "\(transport.rawValue), \(rateText), \(size) B, \(names) name(s), selectivity "
            + Self.percent(selectivity) + ", \(views) view(s)"
        switch container {
        case .none: text += " in a stack"
        case .tabs: text += " in \(pageCount) tabs"
        case .list: text += " in a lazy list (window \(viewsPerPage) rows)"
        }
        text += hasChurn ? ", churn every \(churnMilliseconds) ms" : ", no churn"
        if let posted {
            text += ", body \(bodyMicroseconds) us, \(Format.count(Int(clamping: posted))) msgs posted (at most \(Format.count(count)) in \(Self.number(seconds)) s)"
        } else {
            text += ", body \(bodyMicroseconds) us, up to \(Format.count(count)) msgs / \(Self.number(seconds)) s"
        }
        if backpressure { text += ", publisher back-pressure" }
        if oneAtATime { text += ", one style at a time" }
        switch subscription {
        case .spread: break
        case .one: text += ", views on the first name only"
        case .all: text += ", views on every name (\(Self.allNamesPattern))"
        }
        return text
    }

    static func percent(_ fraction: Double) -> String {
        let value = fraction * 100
        return value == value.rounded() ? String(format: "%.0f%%", value) : String(format: "%.2g%%", value)
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(format: "%.0f", value) : String(format: "%g", value)
    }
}

/// A parameter `nbus bench sweep` varies.
package enum SweepParameter: String, Codable, Sendable, CaseIterable {
    case selectivity, rate, views, churn

    /// The axis title.
    package var title: String {
        switch self {
        case .selectivity: return "selectivity"
        case .rate: return "rate (msg/s)"
        case .views: return "views"
        case .churn: return "churn (ms)"
        }
    }

    /// `scenario` with this parameter set to `value` (text as given on the command line).
    package func apply(_ value: String, to scenario: ViewsScenario) throws(BenchError) -> ViewsScenario {
        var changed = scenario
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        switch self {
        case .selectivity:
            var text = trimmed
            var scale = 1.0
            if text.hasSuffix("%") {
                text.removeLast()
                scale = 0.01
            }
            guard let fraction = Double(text) else { throw .invalidOptions("selectivity value '\(value)' is not a number") }
            changed.selectivity = fraction * scale
        case .rate:
            if trimmed.lowercased() == "max" {
                changed.rate = nil
            } else {
                guard let rate = Self.integer(trimmed) else { throw .invalidOptions("rate value '\(value)' is not a number or max") }
                changed.rate = rate
            }
        case .views:
            guard let views = Self.integer(trimmed) else { throw .invalidOptions("views value '\(value)' is not a number") }
            changed.views = views
        case .churn:
            // Seconds, like every time option of the CLI; the scenario keeps whole milliseconds,
            // so a value that would round to none is refused rather than quietly becoming none.
            guard let seconds = Double(trimmed), seconds.isFinite, (0...3_600).contains(seconds) else {
                throw .invalidOptions("churn value '\(value)' is not from 0 to 3600 seconds")
            }
            guard seconds == 0 || seconds >= 0.001 else {
                throw .invalidOptions("churn value '\(value)' is under a millisecond (0 means none)")
            }
            changed.churnMilliseconds = Int((seconds * 1_000).rounded())
        }
        try changed.validate()
        return changed
    }

    /// The parameter's value in `scenario`, as a number for charts (max rate: 0).
    package func value(in scenario: ViewsScenario) -> Double {
        switch self {
        case .selectivity: return scenario.selectivity
        case .rate: return Double(scenario.rate ?? 0)
        case .views: return Double(scenario.views)
        case .churn: return Double(scenario.churnMilliseconds)
        }
    }

    /// The parameter's value in `scenario`, as a label.
    package func label(in scenario: ViewsScenario) -> String {
        switch self {
        case .selectivity: return ViewsScenario.percent(scenario.selectivity)
        case .rate: return scenario.rate.map { Format.count($0) } ?? "max"
        case .views: return "\(scenario.views)"
        case .churn: return scenario.churnMilliseconds == 0 ? "none" : "\(scenario.churnMilliseconds) ms"
        }
    }

    /// `20k`, `20000`, `1.5k`, `2m`.
    static func integer(_ text: String) -> Int? {
        let lower = text.lowercased().replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")
        if let value = Int(lower) { return value }
        var multiplier = 1.0
        var digits = lower
        if lower.hasSuffix("k") {
            multiplier = 1_000
            digits.removeLast()
        } else if lower.hasSuffix("m") {
            multiplier = 1_000_000
            digits.removeLast()
        }
        // Int(exactly:) is nil for NaN, infinities and values beyond Int (`1e300`), where Int() traps.
        guard let value = Double(digits) else { return nil }
        return Int(exactly: (value * multiplier).rounded())
    }
}
