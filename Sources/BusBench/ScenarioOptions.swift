import Foundation
import NotificationBus

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
    /// Post and consume `ViewsBenchMessage`s (JSON, decoded by each view's consumer) instead of
    /// bytes (`nbus bench views --typed`). Optional so that a scenario written without it reads
    /// back; nil is bytes.
    package var typed: Bool?

    /// Whether the run uses message types.
    package var isTyped: Bool { typed ?? false }

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
        // Bytes unless said (the summaries of runs made before typed ones read as they did).
        if isTyped { text += ", typed messages (\(ViewsBenchMessage.self) as JSON, decoded by each view)" }
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
