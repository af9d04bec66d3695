import Foundation

/// One style's figures, summed over its views, with the accounting identity checked per view.
public struct ViewsStyleSummary: Codable, Sendable {
    public var style: ViewStyle
    public var views: Int
    /// Notifications posted to the names the views subscribe to, summed over views.
    public var published: UInt64
    /// Of those, the ones that match the condition.
    public var publishedMatching: UInt64
    /// Reached the views' subscriptions in the host process.
    public var received: UInt64
    /// Handed to the views' code (the `onReceive` action, or a loop iteration), live or replayed.
    public var delivered: UInt64
    /// Delivered and passing the condition: the code wrote state.
    public var handled: UInt64
    /// State writes, as the runtime counted them.
    public var stateUpdates: UInt64
    /// `body` evaluations of the views after they were ready.
    public var bodyEvaluations: UInt64
    /// Main-actor busy time as the runtime accounts it (bodies, `onReceive` actions, a
    /// main-actor loop's handling), ns, and as a share of the host's window.
    public var mainActorBusyNanoseconds: UInt64
    public var mainActorBusyPercent: Double
    /// How long a job enqueued on the main actor waited to run (sampled every 20 ms), ns.
    public var mainActorPing: LatencySummary
    /// Publish to state update (onReceive: to the end of its action, every notification), ns.
    public var latency: LatencySummary
    // Losses by cause:
    public var lostUpstream: UInt64
    public var droppedLocalBuffer: UInt64
    public var missedWhileHidden: UInt64
    public var discardedAtEnd: UInt64
    /// Kept while hidden and delivered on reappear.
    public var replayed: UInt64
    /// Sequence numbers of the views' names never delivered to the views' code (counted from the
    /// sequence numbers the code saw, independently of the loss counters).
    public var unseenBySequence: UInt64
    /// Gap events the task loops were handed for misses while hidden, and for upstream loss.
    public var inBandHidden: UInt64
    public var inBandUpstream: UInt64
    /// Notifications delivered out of order or twice (none expected).
    public var outOfOrder: UInt64
    /// Expected misses from time alone: each view's published notifications times the share of
    /// the publishing window it was hidden.
    public var expectedHiddenByTime: Double
    /// Visibility changes while the publisher posted.
    public var churnTransitions: Int
    /// The host's CPU time (user + system) over its window, and its peak RSS.
    public var cpuNanoseconds: UInt64
    public var peakResidentKiB: UInt64
    /// Delivered per second of the publishing window.
    public var deliveredPerSecond: Double
    /// The host's window (ready to drained) and drain, ns.
    public var windowNanoseconds: UInt64
    public var drainNanoseconds: UInt64
    public var drainIncomplete: Bool
    /// published == delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd,
    /// for every view.
    public var identityHolds: Bool
    /// The views for which it does not, described.
    public var identityFailures: [String]

    /// The right-hand side of the identity, summed.
    public var accounted: UInt64 { delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd }

    init(publisher: ScenarioPublisherResult, host: ScenarioHostResult, scenario: ViewsScenario) {
        style = host.style
        views = host.views.count
        var published: UInt64 = 0
        var matching: UInt64 = 0
        var unseen: UInt64 = 0
        var expectedHidden = 0.0
        var failures: [String] = []
        let window = Double(publisher.windowNanoseconds)
        for view in host.views {
            let posted = view.name < publisher.postedPerName.count ? publisher.postedPerName[view.name] : 0
            published += posted
            matching += view.name < publisher.matchingPerName.count ? publisher.matchingPerName[view.name] : 0
            unseen += view.skippedSequences + (posted > view.lastSequence ? posted - view.lastSequence : 0)
            if window > 0 { expectedHidden += Double(posted) * Double(view.hiddenNanoseconds) / window }
            var problems: [String] = []
            if view.accounted != posted {
                problems.append(
                    "published \(posted) != delivered \(view.delivered) + lostUpstream \(view.lostUpstream) + "
                        + "droppedLocalBuffer \(view.droppedLocalBuffer) + hidden \(view.missedWhileHidden) + "
                        + "discardedAtEnd \(view.discardedAtEnd) = \(view.accounted) (buffered \(view.buffered))")
            }
            if view.lastSequence > posted { problems.append("sequence \(view.lastSequence) beyond the \(posted) published") }
            if view.outOfOrder > 0 { problems.append("\(view.outOfOrder) delivered out of order or twice") }
            if !problems.isEmpty { failures.append("view \(view.view): " + problems.joined(separator: "; ")) }
        }
        self.published = published
        publishedMatching = matching
        received = host.views.reduce(0) { $0 + $1.received }
        delivered = host.views.reduce(0) { $0 + $1.delivered }
        handled = host.views.reduce(0) { $0 + $1.matched }
        stateUpdates = host.views.reduce(0) { $0 + $1.stateUpdates }
        bodyEvaluations = host.views.reduce(0) { $0 + $1.bodyEvaluations }
        mainActorBusyNanoseconds = host.views.reduce(0) { $0 + $1.mainActorBusyNanoseconds }
        let hostWindow = Double(max(1, host.windowNanoseconds))
        mainActorBusyPercent = Double(mainActorBusyNanoseconds) / hostWindow * 100
        mainActorPing = host.mainActorPing
        latency = host.latency
        lostUpstream = host.views.reduce(0) { $0 + $1.lostUpstream }
        droppedLocalBuffer = host.views.reduce(0) { $0 + $1.droppedLocalBuffer }
        missedWhileHidden = host.views.reduce(0) { $0 + $1.missedWhileHidden }
        discardedAtEnd = host.views.reduce(0) { $0 + $1.discardedAtEnd }
        replayed = host.views.reduce(0) { $0 + $1.replayed }
        unseenBySequence = unseen
        inBandHidden = host.views.reduce(0) { $0 + $1.inBandHidden }
        inBandUpstream = host.views.reduce(0) { $0 + $1.inBandUpstream }
        outOfOrder = host.views.reduce(0) { $0 + $1.outOfOrder }
        expectedHiddenByTime = scenario.container == .none ? 0 : expectedHidden
        churnTransitions = host.churnTransitions
        cpuNanoseconds = host.windowUserNanoseconds + host.windowSystemNanoseconds
        peakResidentKiB = host.peakResidentKiB
        let postSeconds = Double(max(1, publisher.postNanoseconds)) / 1e9
        deliveredPerSecond = Double(delivered) / postSeconds
        windowNanoseconds = host.windowNanoseconds
        drainNanoseconds = host.drainNanoseconds
        drainIncomplete = host.drainIncomplete
        if !failures.isEmpty && publisher.endOfStreamUnacknowledged > 0 && host.endOfStreamRecords == 0 {
            failures.append(
                "the publisher closed before \(publisher.endOfStreamUnacknowledged) host(s) acknowledged its end of stream "
                    + "and this host never saw it: what ZeroMQ still queued for it was discarded, uncounted (raise --drain-seconds)")
        }
        if !host.subscriptionErrors.isEmpty { failures.append("subscriptions failed: \(host.subscriptionErrors)") }
        identityHolds = failures.isEmpty
        identityFailures = failures
    }
}

/// One of the targets, evaluated on this run.
public struct ViewsTarget: Codable, Sendable {
    /// The target as the issue states it.
    public var requirement: String
    /// What this run measured.
    public var measured: String
    /// Met, not met, or nil when this run cannot tell (a style missing, no churn...).
    public var met: Bool?

    public var verdict: String {
        switch met {
        case true?: return "met"
        case false?: return "NOT MET"
        case nil: return "n/a"
        }
    }
}

/// What `nbus bench views` measured: per style, the figures and the identity; the targets.
public struct ViewsReport: Codable, Sendable {
    public var scenario: ViewsScenario
    public var date: Date
    public var wallNanoseconds: UInt64
    /// The publisher's result (the first run's, when styles ran one at a time).
    public var publisher: ScenarioPublisherResult
    public var publishers: [ScenarioPublisherResult]
    public var styles: [ViewsStyleSummary]
    /// The hosts' raw results, per style.
    public var hosts: [ScenarioHostResult]
    public var targets: [ViewsTarget]
    /// Accounting problems: each makes the command exit non-zero.
    public var failures: [String]

    init(
        scenario: ViewsScenario, date: Date, wallNanoseconds: UInt64,
        results: [(ScenarioPublisherResult, ScenarioHostResult)]
    ) {
        self.scenario = scenario
        self.date = date
        self.wallNanoseconds = wallNanoseconds
        publishers = []
        for (publisher, _) in results where !publishers.contains(publisher) { publishers.append(publisher) }
        publisher = publishers.first ?? ScenarioPublisherResult(
            postedPerName: [], matchingPerName: [], firstPostWallNanoseconds: 0, lastPostWallNanoseconds: 0,
            postNanoseconds: 0, closeNanoseconds: 0, requestedRate: 0, bus: BusCounters(.init()),
            endOfStreamUnacknowledged: 0, stoppedBy: "none")
        styles = results.map { ViewsStyleSummary(publisher: $0.0, host: $0.1, scenario: scenario) }
        hosts = results.map(\.1)
        var failures: [String] = []
        for style in styles where !style.identityHolds {
            failures.append(
                "\(style.style.rawValue): identity fails for \(style.identityFailures.count) view(s): "
                    + style.identityFailures.prefix(5).joined(separator: " | "))
        }
        for publisher in publishers where publisher.bus.unsent > 0 {
            failures.append("publisher: \(publisher.bus.unsent) notification(s) never sent")
        }
        self.failures = failures
        targets = Self.evaluateTargets(scenario: scenario, styles: styles)
    }

    /// The summary of `style`, if it ran.
    public func summary(_ style: ViewStyle) -> ViewsStyleSummary? { styles.first { $0.style == style } }

    // MARK: Targets

    static func evaluateTargets(scenario: ViewsScenario, styles: [ViewsStyleSummary]) -> [ViewsTarget] {
        func find(_ style: ViewStyle) -> ViewsStyleSummary? { styles.first { $0.style == style } }
        var targets: [ViewsTarget] = []
        let ms = { (ns: UInt64) in String(format: "%.0f ms", Double(ns) / 1e6) }

        // 1. Busy time.
        let targetScenario = scenario.selectivity == 0.1 && scenario.rate == 50_000 && scenario.bodyMicroseconds == 20
        let scenarioNote = targetScenario ? "" : " [this run is not the target's scenario: 10%, 50k msg/s, 20 us]"
        if let receive = find(.onReceive), let off = find(.taskOffMain) {
            let ratio = Double(off.mainActorBusyNanoseconds) / Double(max(1, receive.mainActorBusyNanoseconds))
            targets.append(
                ViewsTarget(
                    requirement: "off-main task main-actor busy time <= 1/8 of onReceive's (10% selectivity, 50k msg/s, 20 us)",
                    measured: "\(ms(off.mainActorBusyNanoseconds)) vs \(ms(receive.mainActorBusyNanoseconds)): "
                        + String(format: "1/%.1f", ratio > 0 ? 1 / ratio : .infinity) + scenarioNote,
                    met: off.mainActorBusyNanoseconds * 8 <= receive.mainActorBusyNanoseconds))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "off-main task main-actor busy time <= 1/8 of onReceive's", measured: "needs both styles",
                    met: nil))
        }

        // 2. onReceive renders per message.
        if let receive = find(.onReceive) {
            targets.append(
                ViewsTarget(
                    requirement: "onReceive body evaluations == messages received",
                    measured: "\(Format.count(Int(receive.bodyEvaluations))) bodies, \(Format.count(Int(receive.delivered))) delivered",
                    met: receive.bodyEvaluations == receive.delivered))
        }

        // 3. Task renders per match.
        let tasks = styles.filter(\.style.isTask)
        if !tasks.isEmpty {
            let measured = tasks.map {
                "\($0.style.rawValue) \(Format.count(Int($0.bodyEvaluations))) bodies / \(Format.count(Int($0.handled))) matching"
            }
            targets.append(
                ViewsTarget(
                    requirement: "task body evaluations == matching messages", measured: measured.joined(separator: ", "),
                    met: tasks.allSatisfy { $0.bodyEvaluations == $0.handled && $0.stateUpdates == $0.handled }))
        }

        // 4. Plain task with churn: losses are the messages posted while hidden, reported.
        let plain = styles.filter(\.style.isPlainTask)
        if scenario.hasChurn, !plain.isEmpty {
            let measured = plain.map {
                "\($0.style.rawValue): hidden \(Format.count(Int($0.missedWhileHidden))) (by time "
                    + String(format: "%.0f", $0.expectedHiddenByTime) + "), unseen by sequence "
                    + "\(Format.count(Int($0.unseenBySequence))), in-band gaps \(Format.count(Int($0.inBandHidden)))"
            }
            targets.append(
                ViewsTarget(
                    requirement: "with churn, plain task losses == messages posted while hidden (reported, not silent)",
                    measured: measured.joined(separator: "; "),
                    met: plain.allSatisfy {
                        $0.missedWhileHidden > 0 && $0.inBandHidden == $0.missedWhileHidden
                            && $0.unseenBySequence == $0.missedWhileHidden + $0.lostUpstream + $0.droppedLocalBuffer
                    }))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "with churn, plain task losses == messages posted while hidden",
                    measured: "no churn in this run", met: nil))
        }

        // 5. Replay loses nothing within its bound.
        if scenario.hasChurn, let replay = find(.taskReplay) {
            targets.append(
                ViewsTarget(
                    requirement: "replay .all(max:) loses none within its bound",
                    measured: "max \(scenario.replayMax): hidden \(replay.missedWhileHidden), replayed "
                        + "\(Format.count(Int(replay.replayed))), unseen by sequence \(Format.count(Int(replay.unseenBySequence)))",
                    met: replay.missedWhileHidden == 0 && replay.unseenBySequence == replay.lostUpstream + replay.droppedLocalBuffer))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "replay .all(max:) loses none within its bound", measured: "no churn or no replay style",
                    met: nil))
        }
        return targets
    }

    // MARK: Rendering

    /// The report as one JSON object (sorted keys).
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The CSV header line.
    public static let csvHeader = [
        "parameter", "value", "style", "views", "published", "published_matching", "received", "delivered", "handled",
        "state_updates", "body_evaluations", "main_actor_busy_ms", "main_actor_busy_pct", "main_actor_ping_p50_us", "main_actor_ping_p99_us",
        "latency_p50_us", "latency_p99_us", "latency_p999_us", "lost_upstream", "lost_local_buffer", "lost_hidden",
        "discarded_at_end", "replayed", "unseen_by_sequence", "in_band_hidden", "delivered_per_s", "cpu_s",
        "peak_rss_mb", "identity_holds",
    ].joined(separator: ",")

    /// One CSV line per style (with the sweep parameter and value when given).
    public func csvRows(parameter: String = "", value: String = "") -> [String] {
        styles.map { s in
            [
                parameter, value, s.style.rawValue, "\(s.views)", "\(s.published)", "\(s.publishedMatching)",
                "\(s.received)", "\(s.delivered)", "\(s.handled)", "\(s.stateUpdates)", "\(s.bodyEvaluations)",
                String(format: "%.3f", Double(s.mainActorBusyNanoseconds) / 1e6), String(format: "%.2f", s.mainActorBusyPercent),
                String(format: "%.1f", Double(s.mainActorPing.p50) / 1e3), String(format: "%.1f", Double(s.mainActorPing.p99) / 1e3),
                String(format: "%.1f", Double(s.latency.p50) / 1e3),
                String(format: "%.1f", Double(s.latency.p99) / 1e3), String(format: "%.1f", Double(s.latency.p999) / 1e3),
                "\(s.lostUpstream)", "\(s.droppedLocalBuffer)", "\(s.missedWhileHidden)", "\(s.discardedAtEnd)",
                "\(s.replayed)", "\(s.unseenBySequence)", "\(s.inBandHidden)", String(format: "%.0f", s.deliveredPerSecond),
                String(format: "%.3f", Double(s.cpuNanoseconds) / 1e9),
                String(format: "%.1f", Double(s.peakResidentKiB) * 1_024 / 1e6), s.identityHolds ? "true" : "false",
            ].map(Self.csvField).joined(separator: ",")
        }
    }

    /// The report as CSV: a header and one line per style.
    public func csv() -> String {
        ([Self.csvHeader] + csvRows()).joined(separator: "\n") + "\n"
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(",") || text.contains("\"") || text.contains("\n") else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The rows of the per-style table: a label and one cell per style.
    func tableRows() -> [(String, [String])] {
        func count(_ value: UInt64) -> String { Format.count(Int(value)) }
        func ms(_ value: UInt64) -> String { String(format: "%.0f ms", Double(value) / 1e6) }
        func us(_ value: UInt64) -> String { Format.nanoseconds(Double(value)) }
        return [
            ("published (to the views)", styles.map { count($0.published) }),
            ("  of which matching", styles.map { count($0.publishedMatching) }),
            ("received (host's subscriptions)", styles.map { count($0.received) }),
            ("delivered (view code ran)", styles.map { count($0.delivered) }),
            ("handled (matched: state written)", styles.map { count($0.handled) }),
            ("state updates", styles.map { count($0.stateUpdates) }),
            ("body evaluations", styles.map { count($0.bodyEvaluations) }),
            ("main-actor busy (runtime)", styles.map { "\(ms($0.mainActorBusyNanoseconds)) " + String(format: "%.1f%%", $0.mainActorBusyPercent) }),
            ("main-actor ping p50 / p99", styles.map { "\(us($0.mainActorPing.p50)) / \(us($0.mainActorPing.p99))" }),
            ("latency p50", styles.map { us($0.latency.p50) }),
            ("latency p99", styles.map { us($0.latency.p99) }),
            ("latency p99.9", styles.map { us($0.latency.p999) }),
            ("lost upstream (gap)", styles.map { count($0.lostUpstream) }),
            ("lost local buffer", styles.map { count($0.droppedLocalBuffer) }),
            ("lost hidden", styles.map { count($0.missedWhileHidden) }),
            ("discarded at end", styles.map { count($0.discardedAtEnd) }),
            ("replayed", styles.map { count($0.replayed) }),
            ("unseen by sequence number", styles.map { count($0.unseenBySequence) }),
            ("in-band gaps (hidden)", styles.map { $0.style.isTask ? count($0.inBandHidden) : "-" }),
            ("delivered / s", styles.map { Format.rate($0.deliveredPerSecond) }),
            ("CPU (host, window)", styles.map { String(format: "%.2f s", Double($0.cpuNanoseconds) / 1e9) }),
            ("peak RSS (host)", styles.map { String(format: "%.1f MB", Double($0.peakResidentKiB) * 1_024 / 1e6) }),
            ("drain", styles.map { Format.nanoseconds(Double($0.drainNanoseconds)) + ($0.drainIncomplete ? " INCOMPLETE" : "") }),
            ("identity", styles.map { $0.identityHolds ? "HOLDS" : "FAILS" }),
        ]
    }

    /// The report as a terminal table, then the identity per style and the targets.
    public func table() -> String {
        var lines: [String] = []
        lines.append("nbus bench views: \(scenario.summary)")
        for (index, publisher) in publishers.enumerated() {
            let label = publishers.count > 1 ? "publisher run \(index + 1)" : "publisher"
            lines.append(
                "\(label): posted \(Format.count(Int(publisher.posted))) in \(Format.nanoseconds(Double(publisher.postNanoseconds))) "
                    + "(\(Format.rate(publisher.postRate))/s, stopped by \(publisher.stoppedBy)); wall \(Format.nanoseconds(Double(wallNanoseconds)))")
        }
        lines.append("")
        let rows = tableRows()
        let labelWidth = max(34, rows.map(\.0.count).max() ?? 0)
        let widest = rows.flatMap(\.1).map(\.count).max() ?? 0
        let columnWidth = max(18, max(widest, styles.map(\.style.title.count).max() ?? 0) + 2)
        func pad(_ text: String, _ width: Int, right: Bool = true) -> String {
            let padding = String(repeating: " ", count: max(0, width - text.count))
            return right ? padding + text : text + padding
        }
        lines.append(pad("", labelWidth, right: false) + styles.map { pad($0.style.title, columnWidth) }.joined())
        for (label, cells) in rows {
            lines.append(pad(label, labelWidth, right: false) + cells.map { pad($0, columnWidth) }.joined())
        }
        lines.append("")
        lines.append("Accounting identity, per view: published = delivered + lost upstream + lost local buffer + lost hidden + discarded at end")
        for style in styles {
            let verdict = style.identityHolds ? "HOLDS" : "FAILS"
            lines.append(
                "  \(pad(style.style.rawValue, 14, right: false)) \(Format.count(Int(style.published))) = "
                    + "\(Format.count(Int(style.delivered))) + \(Format.count(Int(style.lostUpstream))) + "
                    + "\(Format.count(Int(style.droppedLocalBuffer))) + \(Format.count(Int(style.missedWhileHidden))) + "
                    + "\(Format.count(Int(style.discardedAtEnd))) = \(Format.count(Int(style.accounted))): \(verdict)")
            for failure in style.identityFailures.prefix(5) { lines.append("      " + failure) }
        }
        lines.append("")
        lines.append("Targets")
        for target in targets {
            lines.append("  [\(target.verdict)] \(target.requirement)")
            lines.append("      \(target.measured)")
        }
        if !failures.isEmpty {
            lines.append("")
            lines.append("ACCOUNTING FAILURES:")
            for failure in failures { lines.append("  " + failure) }
        }
        return lines.joined(separator: "\n")
    }
}
