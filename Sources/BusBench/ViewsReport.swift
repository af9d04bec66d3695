import Foundation

/// What `nbus bench views` measured: per style, the figures and the identity; the targets.
package struct ViewsReport: Codable, Sendable {
    package var scenario: ViewsScenario
    package var date: Date
    package var wallNanoseconds: UInt64
    /// The publisher's result (the first run's, when styles ran one at a time).
    package var publisher: ScenarioPublisherResult
    package var publishers: [ScenarioPublisherResult]
    package var styles: [ViewsStyleSummary]
    /// The hosts' raw results, per style.
    package var hosts: [ScenarioHostResult]
    package var targets: [ViewsTarget]
    /// Raw libzmq and Foundation `NotificationCenter`, measured in the same invocation.
    package var baselines: ViewsBaselines
    /// Each style's figures as multiples of raw libzmq's (empty without the raw row).
    package var rawRatios: [ViewsRawRatio]
    /// Accounting problems: each makes the command exit non-zero.
    package var failures: [String]
    /// The build, machine, libzmq, commit and command line of this run.
    package var context: RunContext
    /// The answer, computed from the figures above.
    package var verdict: ViewsVerdict
    /// The publishing window (first to last post of the first publisher), seconds.
    package var postingSeconds: Double
    /// Visibility changes (tab switches, scrolls) of the first host, seconds since the first post.
    package var visibilityChangeSeconds: [Double]
    /// `nbus demo`'s retained-views step (issue 39): nil for `nbus bench views` and older reports.
    package private(set) var retainedViews: RetainedViewsResult?

    /// Adds the retained-views step's result; one that does not show what it should is a failure.
    package mutating func add(retainedViews result: RetainedViewsResult) {
        retainedViews = result
        if !result.holds {
            failures.append("retained views: " + result.lines.joined(separator: " | "))
        }
    }

    init(
        scenario: ViewsScenario, date: Date, wallNanoseconds: UInt64,
        results: [(ScenarioPublisherResult, ScenarioHostResult)], baselines: ViewsBaselines = .none("not run"),
        context: RunContext = .current()
    ) {
        self.context = context
        self.scenario = scenario
        self.baselines = baselines
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
        if let raw = baselines.raw, raw.delivered != raw.published || raw.gaps > 0 || raw.badSize > 0 {
            failures.append(
                "raw libzmq baseline: delivered \(raw.delivered) of \(raw.published) (gaps \(raw.gaps), wrong size \(raw.badSize))")
        }
        if let foundation = baselines.foundation, foundation.delivered != foundation.posted {
            failures.append("Foundation baseline: delivered \(foundation.delivered) of \(foundation.posted)")
        }
        self.failures = failures
        let summaries = styles
        rawRatios = baselines.raw.map { raw in summaries.map { ViewsRawRatio(style: $0, raw: raw) } } ?? []
        targets = Self.evaluateTargets(scenario: scenario, styles: summaries)
        verdict = Self.evaluateVerdict(scenario: scenario, styles: summaries, failures: failures)
        if let load = context.load, load.loaded(cores: context.cores) {
            // A loaded machine moves the verdict between runs: say so where it is read.
            verdict.headline += String(
                format: " The machine was loaded during the run (load average up to %.2f on %d cores, steal %.1f%%): "
                    + "run it again on a quiet machine before reading much into a difference.",
                max(load.loadAverageBefore, load.loadAverageAfter), context.cores, load.stealFraction * 100)
        }
        let first = publishers.first
        postingSeconds = first.map { Double($0.windowNanoseconds) / 1e9 } ?? 0
        let origin = first?.firstPostWallNanoseconds ?? 0
        visibilityChangeSeconds = (results.first?.1.visibilityChanges ?? []).filter { $0 >= origin }
            .map { Double($0 - origin) / 1e9 }
    }

    /// What the run did, for headers: the scenario with the notifications actually posted.
    package var runSummary: String {
        scenario.summary(posted: publishers.reduce(UInt64(0)) { $0 + $1.posted })
    }

    /// The summary of `style`, if it ran.
    package func summary(_ style: ViewStyle) -> ViewsStyleSummary? { styles.first { $0.style == style } }

    // MARK: Targets

    static func evaluateTargets(scenario: ViewsScenario, styles: [ViewsStyleSummary]) -> [ViewsTarget] {
        func find(_ style: ViewStyle) -> ViewsStyleSummary? { styles.first { $0.style == style } }
        var targets: [ViewsTarget] = []
        let ms = { (ns: UInt64) in Format.duration(Double(ns)) }

        // 1. Busy time: defined for one scenario only.
        let busyScenario = "10% selectivity, 50,000 msg/s, 20 us of body cost"
        let isBusyScenario = scenario.selectivity == 0.1 && scenario.rate == 50_000 && scenario.bodyMicroseconds == 20
        if let receive = find(.onReceive), let off = find(.taskOffMain) {
            let ratio = Double(off.mainActorBusyNanoseconds) / Double(max(1, receive.mainActorBusyNanoseconds))
            targets.append(
                ViewsTarget(
                    requirement: "task (off-main) main-actor busy time <= 1/8 of onReceive's", scenario: busyScenario,
                    applies: isBusyScenario,
                    measured: "\(ms(off.mainActorBusyNanoseconds)) against \(ms(receive.mainActorBusyNanoseconds)): "
                        + String(format: "1/%.1f", ratio > 0 ? 1 / ratio : .infinity)
                        + (isBusyScenario ? "" : " (this run: \(scenario.rate.map { Format.count($0) } ?? "max") msg/s, "
                            + String(format: "%g%%", scenario.selectivity * 100) + ", \(scenario.bodyMicroseconds) us)"),
                    met: off.mainActorBusyNanoseconds * 8 <= receive.mainActorBusyNanoseconds))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "task (off-main) main-actor busy time <= 1/8 of onReceive's", scenario: busyScenario,
                    applies: isBusyScenario, measured: "needs both onReceive and task-off-main", met: nil))
        }

        // 2. onReceive renders per message: any run with onReceive.
        if let receive = find(.onReceive) {
            targets.append(
                ViewsTarget(
                    requirement: "onReceive: one body evaluation per notification delivered", scenario: "any run with onReceive",
                    applies: true,
                    measured: "\(Format.count(Int(receive.bodyEvaluations))) body evaluations, \(Format.count(Int(receive.delivered))) delivered",
                    met: receive.bodyEvaluations == receive.delivered))
        }

        // 3. Task renders per match: any run with a task style.
        let tasks = styles.filter(\.style.isTask)
        if !tasks.isEmpty {
            let measured = tasks.map {
                "\($0.style.title): \(Format.count(Int($0.bodyEvaluations))) body evaluations, \(Format.count(Int($0.handled))) matching"
            }
            targets.append(
                ViewsTarget(
                    requirement: "task styles: one body evaluation per matching notification, none for the rest",
                    scenario: "any run with a task style", applies: true, measured: measured.joined(separator: "; "),
                    met: tasks.allSatisfy { $0.bodyEvaluations == $0.handled && $0.stateUpdates == $0.handled }))
        }

        // 4. Plain task with churn: losses are the messages posted while hidden, reported.
        let plain = styles.filter(\.style.isPlainTask)
        let churnScenario = "visibility churn (tabs or a list, --churn-interval > 0) and a plain task style"
        if scenario.hasChurn, !plain.isEmpty {
            let measured = plain.map {
                "\($0.style.title): missed while hidden \(Format.count(Int($0.missedWhileHidden))) (expected from the time hidden: "
                    + Format.count(Int($0.expectedHiddenByTime.rounded())) + "), unseen by sequence number "
                    + "\(Format.count(Int($0.unseenBySequence))), reported in-band \(Format.count(Int($0.inBandHidden)))"
            }
            targets.append(
                ViewsTarget(
                    requirement: "plain task: what it loses is what was posted while its view was hidden, each reported as a gap",
                    scenario: churnScenario, applies: true, measured: measured.joined(separator: "; "),
                    met: plain.allSatisfy {
                        $0.missedWhileHidden > 0 && $0.inBandHidden == $0.missedWhileHidden
                            && $0.unseenBySequence == $0.missedWhileHidden + $0.lostUpstream + $0.droppedLocalBuffer
                    }))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "plain task: what it loses is what was posted while its view was hidden, each reported as a gap",
                    scenario: churnScenario, applies: false, measured: "no churn or no plain task style in this run", met: nil))
        }

        // 5. Replay loses nothing within its bound: defined where a hidden spell stays within it.
        let perViewWhileHidden = scenario.rate.map { rate -> Double in
            Double(rate) / Double(max(1, scenario.names)) * Double(scenario.churnMilliseconds) / 1_000
                * Double(max(0, scenario.pageCount - 1))
        }
        let withinBound = perViewWhileHidden.map { $0 <= Double(scenario.replayMax) } ?? false
        let replayScenario = "churn, and what a view gets during one hidden spell within replay's max (\(Format.count(scenario.replayMax)))"
        if scenario.hasChurn, let replay = find(.taskReplay) {
            let expected = perViewWhileHidden.map { String(format: "about %.0f per view per hidden spell", $0) } ?? "unpaced"
            targets.append(
                ViewsTarget(
                    requirement: "task replay .all(max:): loses nothing within its bound", scenario: replayScenario,
                    applies: withinBound,
                    measured: "missed while hidden \(Format.count(Int(replay.missedWhileHidden))), replayed "
                        + "\(Format.count(Int(replay.replayed))), unseen by sequence number \(Format.count(Int(replay.unseenBySequence))), "
                        + "lost upstream \(Format.count(Int(replay.lostUpstream))) (\(expected))",
                    met: replay.missedWhileHidden == 0 && replay.unexpectedLosses == 0))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "task replay .all(max:): loses nothing within its bound", scenario: replayScenario,
                    applies: false, measured: "no churn or no replay style in this run", met: nil))
        }
        return targets
    }

    // MARK: Verdict

    static func evaluateVerdict(scenario: ViewsScenario, styles: [ViewsStyleSummary], failures: [String]) -> ViewsVerdict {
        func percent(_ part: UInt64, _ whole: UInt64) -> String {
            whole == 0 ? "0%" : String(format: "%.1f%%", Double(part) / Double(whole) * 100)
        }
        var verdicts: [ViewsVerdict.Style] = []
        for s in styles {
            var parts: [String] = []
            let behind = s.fellBehind
            let f = s.timelineFindings
            if behind {
                let seconds = s.publishedPerSecond > 0 ? f.peakBacklog / s.publishedPerSecond : 0
                parts.append(
                    "FELL BEHIND: "
                        + (s.drainIncomplete
                            ? "it had not caught up when the drain gave up"
                            : "latency p50 \(Format.duration(Double(s.latency.p50))), p99 \(Format.duration(Double(s.latency.p99))), "
                                + "still catching up \(Format.duration(Double(s.drainNanoseconds))) after the last post")
                        + "; its backlog grew to \(Format.count(Int(f.peakBacklog))) notifications at "
                        + String(format: "%.1f s", f.peakBacklogSeconds)
                        + (seconds > 0 ? String(format: " (%.1f s of its traffic)", seconds) : ""))
            } else if s.unexpectedLosses > 0 {
                // Not "kept up": what reached it came in time, but not all of the stream did.
                parts.append(
                    "kept pace with what reached it (median latency \(Format.duration(Double(s.latency.p50))), "
                        + "p99 \(Format.duration(Double(s.latency.p99)))) but not with the stream: see its losses")
            } else {
                parts.append(
                    "kept up: median latency \(Format.duration(Double(s.latency.p50))), p99 \(Format.duration(Double(s.latency.p99)))")
            }
            parts.append("delivered \(Format.count(Int(s.delivered))) of \(Format.count(Int(s.published))) (\(percent(s.delivered, s.published)))")
            if s.lostUpstream > 0 {
                let when = f.firstUpstreamLossSeconds.map {
                    String(format: ", first seen at %.1f s (a gap shows when a later notification or the end-of-stream record arrives)", $0)
                } ?? ""
                // Why its queue filled: the main actor when it was busy, else the consumer itself.
                let why = s.mainActorBusyPercent >= 25
                    ? "its socket queue filled while its main actor was busy"
                    : "its socket queue filled faster than its consumer took from it (the main actor was "
                        + String(format: "%.1f%%", s.mainActorBusyPercent) + " busy: the consumer, not the main actor, was the bottleneck)"
                parts.append(
                    "LOST \(Format.count(Int(s.lostUpstream))) UPSTREAM (\(percent(s.lostUpstream, s.published))): \(why), "
                        + "and the publisher's high-water mark dropped the rest\(when)")
            }
            if s.droppedLocalBuffer > 0 {
                parts.append("DROPPED \(Format.count(Int(s.droppedLocalBuffer))) at its local buffer (\(percent(s.droppedLocalBuffer, s.published)))")
            }
            if s.missedWhileHidden > 0 {
                if s.style.isPlainTask {
                    parts.append(
                        "missed \(Format.count(Int(s.missedWhileHidden))) (\(percent(s.missedWhileHidden, s.published))) while its view "
                            + "was hidden: expected, a plain task runs only while visible, and each miss was reported as a gap")
                } else if s.style == .taskReplay {
                    parts.append(
                        "MISSED \(Format.count(Int(s.missedWhileHidden))) while hidden: more than replay's max "
                            + "(\(Format.count(scenario.replayMax))) were waiting for a view when it showed again (what arrived "
                            + "while it was hidden, plus what it had not yet taken when it was hidden)")
                }
            }
            if s.replayed > 0 {
                parts.append(
                    "replayed \(Format.count(Int(s.replayed))) on reappear (their latency includes the time hidden, by design)")
            }
            if !s.identityHolds { parts.append("ACCOUNTING IDENTITY FAILS for \(s.identityFailures.count) view(s)") }
            let perDelivered = s.delivered > 0 ? Double(s.bodyEvaluations) / Double(s.delivered) : 0
            parts.append(
                "cost: main actor " + String(format: "%.1f%%", s.mainActorBusyPercent) + " busy"
                    + String(format: " (peak %.0f%% in a 250 ms interval)", f.peakMainActorBusyPercent)
                    + ", \(Format.count(Int(s.bodyEvaluations))) body evaluations"
                    + String(format: " (%.2f per notification delivered)", perDelivered))
            let ok = !behind && s.unexpectedLosses == 0 && s.identityHolds
            verdicts.append(ViewsVerdict.Style(style: s.style, ok: ok, text: "\(s.style.title): " + parts.joined(separator: "; ") + "."))
        }
        let keptUp = styles.filter { style in verdicts.first { $0.style == style.style }?.ok == true }
        let flagged = styles.filter { style in verdicts.first { $0.style == style.style }?.ok == false }
        let load = "\(scenario.rate.map { Format.count($0) + " msg/s" } ?? "max rate"), \(scenario.views) views, "
            + String(format: "%g%% matching", scenario.selectivity * 100)
        var headline: String
        if let best = keptUp.min(by: { $0.mainActorBusyPercent < $1.mainActorBusyPercent }) {
            headline = "At \(load): \(best.style.title) kept up at the lowest main-actor cost ("
                + String(format: "%.1f%%", best.mainActorBusyPercent) + ")"
            let others = keptUp.filter { $0.style != best.style }.map {
                "\($0.style.title) (" + String(format: "%.1f%%", $0.mainActorBusyPercent) + ")"
            }
            if !others.isEmpty { headline += "; also kept up: " + others.joined(separator: ", ") }
            headline += "."
        } else {
            headline = "At \(load): no style kept up."
        }
        for style in flagged {
            var what: [String] = []
            if style.fellBehind {
                what.append(
                    "fell behind (latency p50 \(Format.duration(Double(style.latency.p50))), p99 \(Format.duration(Double(style.latency.p99))))")
            }
            if style.lostUpstream + style.droppedLocalBuffer > 0 {
                what.append("lost \(percent(style.lostUpstream + style.droppedLocalBuffer, style.published)) upstream or locally")
            }
            if style.style == .taskReplay && style.missedWhileHidden > 0 { what.append("missed beyond its replay bound") }
            if !style.identityHolds { what.append("broke the accounting identity") }
            headline += " \(style.style.title) " + what.joined(separator: " and ") + " at "
                + String(format: "%.1f%%", style.mainActorBusyPercent) + " of the main actor."
        }
        if !failures.isEmpty { headline += " Accounting failures: see below." }
        return ViewsVerdict(headline: headline, styles: verdicts)
    }
}
