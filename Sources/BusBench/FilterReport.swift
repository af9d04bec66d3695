import Foundation

/// What `nbus bench filter` measured: per host, the figures and the identity; the CPU ratio.
package struct FilterReport: Codable, Sendable {
    /// The scenario both hosts ran (names, rate, views, style...).
    package var scenario: ViewsScenario
    /// The consumer style of both hosts' views.
    package var style: ViewStyle
    /// The target: `cpuRatio` at most this.
    package var targetRatio: Double
    /// When the run started, and how long it took in all, ns.
    package var date: Date
    package var wallNanoseconds: UInt64
    /// What the publisher posted, per name.
    package var publisher: ScenarioPublisherResult
    /// Host A: views on the first name only. Host B: views on every name.
    package var one: ViewsStyleSummary
    package var all: ViewsStyleSummary
    /// The hosts' own results.
    package var hosts: [ScenarioHostResult]
    /// A's CPU time over its window / B's (user + system, getrusage in each host).
    package var cpuRatio: Double
    /// The same over each host's whole life (startup included, which both pay alike).
    package var lifetimeCPURatio: Double
    /// A's frames received / B's: what ZeroMQ filtered at the publisher.
    package var framesRatio: Double
    /// Whether `cpuRatio <= targetRatio`.
    package var met: Bool
    /// Accounting problems (either identity failing): each makes the command exit non-zero.
    package var failures: [String]

    init(
        scenario: ViewsScenario, style: ViewStyle, targetRatio: Double, date: Date, wallNanoseconds: UInt64,
        publisher: ScenarioPublisherResult, one: ScenarioHostResult, all: ScenarioHostResult
    ) {
        self.scenario = scenario
        self.style = style
        self.targetRatio = targetRatio
        self.date = date
        self.wallNanoseconds = wallNanoseconds
        self.publisher = publisher
        var oneScenario = scenario
        oneScenario.subscription = .one
        var allScenario = scenario
        allScenario.subscription = .all
        self.one = ViewsStyleSummary(publisher: publisher, host: one, scenario: oneScenario)
        self.all = ViewsStyleSummary(publisher: publisher, host: all, scenario: allScenario)
        hosts = [one, all]
        func ratio(_ a: UInt64, _ b: UInt64) -> Double { b == 0 ? .infinity : Double(a) / Double(b) }
        cpuRatio = ratio(self.one.cpuNanoseconds, self.all.cpuNanoseconds)
        lifetimeCPURatio = ratio(
            one.totalUserNanoseconds + one.totalSystemNanoseconds, all.totalUserNanoseconds + all.totalSystemNanoseconds)
        framesRatio = ratio(one.framesReceived, all.framesReceived)
        met = cpuRatio <= targetRatio
        var failures: [String] = []
        for (name, summary) in [("one", self.one), ("all", self.all)] where !summary.identityHolds {
            failures.append(
                "host subscribed to \(name): identity fails for \(summary.identityFailures.count) view(s): "
                    + summary.identityFailures.prefix(5).joined(separator: " | "))
        }
        if publisher.bus.unsent > 0 { failures.append("publisher: \(publisher.bus.unsent) notification(s) never sent") }
        if self.all.published == 0 || self.all.cpuNanoseconds == 0 {
            failures.append("the all-names host measured nothing (published \(self.all.published), CPU \(self.all.cpuNanoseconds) ns)")
        }
        self.failures = failures
    }

    /// The requirement, as the issue states it.
    package var requirement: String {
        "with \(scenario.names) names and views subscribed to 1 of them, the subscriber's CPU time is at most "
            + ViewsScenario.percent(targetRatio) + " of the same run subscribed to all names"
    }

    /// The report as one JSON object (sorted keys).
    package func json() throws -> String {
        try ReportJSON.encode(self)
    }

    /// The report as a terminal table: one column per host, the ratio and the verdict.
    package func table() -> String {
        func count(_ value: UInt64) -> String { Format.count(Int(value)) }
        func seconds(_ ns: UInt64) -> String { String(format: "%.3f s", Double(ns) / 1e9) }
        let hostsByColumn = [(one, hosts[0]), (all, hosts[1])]
        let rows: [(String, [String])] = [
            ("subscription", ["1 name (exact)", "every name (\(ViewsScenario.allNamesPattern))"]),
            ("frames reaching the host's socket", hostsByColumn.map { count($0.0.framesReceived) }),
            ("published (to the views)", hostsByColumn.map { count($0.0.published) }),
            ("delivered (view code ran)", hostsByColumn.map { count($0.0.delivered) }),
            ("handled (matched: state written)", hostsByColumn.map { count($0.0.handled) }),
            ("body evaluations", hostsByColumn.map { count($0.0.bodyEvaluations) }),
            ("lost (upstream + local + hidden + at end)", hostsByColumn.map {
                count($0.0.lostUpstream + $0.0.droppedLocalBuffer + $0.0.missedWhileHidden + $0.0.discardedAtEnd)
            }),
            ("latency p50 / p99", hostsByColumn.map {
                Format.nanoseconds(Double($0.0.latency.p50)) + " / " + Format.nanoseconds(Double($0.0.latency.p99))
            }),
            ("CPU, window (ready to drained)", hostsByColumn.map { seconds($0.0.cpuNanoseconds) }),
            ("  window", hostsByColumn.map { Format.nanoseconds(Double($0.0.windowNanoseconds)) }),
            ("CPU, whole process life", hostsByColumn.map { seconds($0.1.totalUserNanoseconds + $0.1.totalSystemNanoseconds) }),
            ("peak RSS", hostsByColumn.map { String(format: "%.1f MB", Double($0.0.peakResidentKiB) * 1_024 / 1e6) }),
            ("identity", hostsByColumn.map { $0.0.identityHolds ? "HOLDS" : "FAILS" }),
        ]
        var lines: [String] = []
        lines.append("nbus bench filter: \(style.rawValue), \(scenario.summary)")
        lines.append(
            "publisher: posted \(Format.count(Int(publisher.posted))) round-robin over \(scenario.names) names in "
                + "\(Format.nanoseconds(Double(publisher.postNanoseconds))) (\(Format.rate(publisher.postRate))/s, stopped by "
                + "\(publisher.stoppedBy)); wall \(Format.nanoseconds(Double(wallNanoseconds)))")
        lines.append("")
        let labelWidth = rows.map(\.0.count).max() ?? 0
        let columnWidth = max(24, (rows.flatMap(\.1).map(\.count).max() ?? 0) + 2)
        lines.append(
            ViewsReport.pad("", labelWidth, right: false) + ViewsReport.pad("A: views on one name", columnWidth)
                + ViewsReport.pad("B: views on all names", columnWidth))
        for (label, cells) in rows {
            lines.append(ViewsReport.pad(label, labelWidth, right: false) + cells.map { ViewsReport.pad($0, columnWidth) }.joined())
        }
        lines.append("")
        lines.append("Accounting identity, per view: published = delivered + lost upstream + lost local buffer + lost hidden + discarded at end")
        for (name, summary) in [("A (one)", one), ("B (all)", all)] {
            lines.append(
                "  \(ViewsReport.pad(name, 8, right: false)) \(count(summary.published)) = \(count(summary.delivered)) + "
                    + "\(count(summary.lostUpstream)) + \(count(summary.droppedLocalBuffer)) + \(count(summary.missedWhileHidden)) + "
                    + "\(count(summary.discardedAtEnd)) = \(count(summary.accounted)): \(summary.identityHolds ? "HOLDS" : "FAILS")")
            for failure in summary.identityFailures.prefix(5) { lines.append("      " + failure) }
        }
        lines.append("")
        lines.append("Target")
        lines.append("  [\(met ? "met" : "NOT MET")] \(requirement)")
        lines.append(
            "      A / B CPU over the window: " + String(format: "%.4f (%.2f%%)", cpuRatio, cpuRatio * 100)
                + String(format: "; over the whole process life %.4f; frames reaching the socket A / B %.4f", lifetimeCPURatio, framesRatio))
        if !failures.isEmpty {
            lines.append("")
            lines.append("ACCOUNTING FAILURES:")
            for failure in failures { lines.append("  " + failure) }
        }
        return lines.joined(separator: "\n")
    }
}
