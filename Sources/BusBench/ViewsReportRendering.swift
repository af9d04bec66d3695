import Foundation

/// `nbus bench views` output: one JSON object, CSV (a line per style and per baseline) and the
/// terminal table (styles as columns, then the baselines and each style as a multiple of raw libzmq).
extension ViewsReport {
    /// The report as one JSON object (sorted keys).
    package func json() throws -> String {
        try ReportJSON.encode(self)
    }

    /// The CSV header line. `kind` is `style` or `baseline`; a baseline row leaves the figures it
    /// has no counterpart for empty.
    package static let csvHeader = [
        "parameter", "value", "kind", "style", "views", "published", "published_matching", "received", "delivered", "handled",
        "state_updates", "body_evaluations", "main_actor_busy_ms", "main_actor_busy_pct", "main_actor_ping_p50_us",
        "main_actor_ping_p99_us", "latency_p50_us", "latency_p99_us", "latency_p999_us", "lost_upstream", "lost_local_buffer",
        "lost_hidden", "discarded_at_end", "replayed", "unseen_by_sequence", "in_band_hidden", "delivered_per_s", "cpu_s",
        "cpu_per_frame_us", "cpu_per_frame_x_raw", "latency_p50_x_raw", "peak_rss_mb", "identity_holds",
    ].joined(separator: ",")

    /// One CSV line per style, then one per baseline (with the sweep parameter and value when given).
    package func csvRows(parameter: String = "", value: String = "") -> [String] {
        func us(_ ns: UInt64) -> String { String(format: "%.1f", Double(ns) / 1e3) }
        func ratio(_ value: Double?) -> String { value.map { String(format: "%.3f", $0) } ?? "" }
        let styleRows = styles.map { s in
            let ratios = rawRatios.first { $0.style == s.style }
            return [
                parameter, value, "style", s.style.rawValue, "\(s.views)", "\(s.published)", "\(s.publishedMatching)",
                "\(s.received)", "\(s.delivered)", "\(s.handled)", "\(s.stateUpdates)", "\(s.bodyEvaluations)",
                String(format: "%.3f", Double(s.mainActorBusyNanoseconds) / 1e6), String(format: "%.2f", s.mainActorBusyPercent),
                us(s.mainActorPing.p50), us(s.mainActorPing.p99), us(s.latency.p50), us(s.latency.p99), us(s.latency.p999),
                "\(s.lostUpstream)", "\(s.droppedLocalBuffer)", "\(s.missedWhileHidden)", "\(s.discardedAtEnd)",
                "\(s.replayed)", "\(s.unseenBySequence)", "\(s.inBandHidden)", String(format: "%.0f", s.deliveredPerSecond),
                String(format: "%.3f", Double(s.cpuNanoseconds) / 1e9), String(format: "%.3f", s.cpuPerFrameNanoseconds / 1e3),
                ratio(ratios?.cpuPerFrame), ratio(ratios?.latencyP50),
                String(format: "%.1f", Double(s.peakResidentKiB) * 1_024 / 1e6), s.identityHolds ? "true" : "false",
            ].map(Self.csvField).joined(separator: ",")
        }
        var baselineRows: [String] = []
        if let raw = baselines.raw {
            baselineRows.append([
                parameter, value, "baseline", RawBaselineRow.key, "", "\(raw.published)", "", "\(raw.delivered)",
                "\(raw.delivered)", "", "", "", "", "", "", "", raw.latency.map { us($0.p50) } ?? "",
                raw.latency.map { us($0.p99) } ?? "", raw.latency.map { us($0.p999) } ?? "", "\(raw.gaps)", "", "", "", "", "", "",
                String(format: "%.0f", raw.deliveredPerSecond), String(format: "%.3f", Double(raw.cpuNanoseconds) / 1e9),
                String(format: "%.3f", raw.cpuPerFrameNanoseconds / 1e3), "1.000", raw.latency == nil ? "" : "1.000",
                String(format: "%.1f", Double(raw.peakResidentKiB) * 1_024 / 1e6),
                raw.delivered == raw.published && raw.gaps == 0 ? "true" : "false",
            ].map(Self.csvField).joined(separator: ","))
        }
        if let foundation = baselines.foundation {
            baselineRows.append([
                parameter, value, "baseline", FoundationBaselineRow.key, "1", "\(foundation.posted)", "",
                "\(foundation.delivered)", "\(foundation.delivered)", "", "", "", "", "", "", "", "", "", "", "", "", "", "",
                "", "", "", String(format: "%.0f", foundation.deliveredPerSecond),
                String(format: "%.3f", Double(foundation.cpuNanoseconds) / 1e9),
                String(format: "%.3f", foundation.cpuPerNotificationNanoseconds / 1e3), "", "", "",
                foundation.delivered == foundation.posted ? "true" : "false",
            ].map(Self.csvField).joined(separator: ","))
        }
        return styleRows + baselineRows
    }

    /// The report as CSV: a header and one line per style and per baseline.
    package func csv() -> String {
        ([Self.csvHeader] + csvRows()).joined(separator: "\n") + "\n"
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(",") || text.contains("\"") || text.contains("\n") else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The rows of the per-style table: a label and one cell per style.
    func tableRows() -> [(String, [String])] {
        func count(_ value: UInt64) -> String { Format.count(Int(value)) }
        func duration(_ value: UInt64) -> String { Format.duration(Double(value)) }
        var rows: [(String, [String])] = [
            ("published to the views", styles.map { count($0.published) }),
            ("  of which matching the condition", styles.map { count($0.publishedMatching) }),
            ("received by the host's subscriptions", styles.map { count($0.received) }),
            ("delivered: handed to the views' code", styles.map { count($0.delivered) }),
            ("handled: matched, state written", styles.map { count($0.handled) }),
            ("state updates", styles.map { count($0.stateUpdates) }),
            ("body evaluations (renders)", styles.map { count($0.bodyEvaluations) }),
            ("main-actor busy: time, share of run", styles.map {
                duration($0.mainActorBusyNanoseconds) + " " + String(format: "%.1f%%", $0.mainActorBusyPercent)
            }),
            ("main-actor wait for a job: p50 / p99", styles.map { "\(duration($0.mainActorPing.p50)) / \(duration($0.mainActorPing.p99))" }),
            ("latency publish -> state: p50", styles.map { duration($0.latency.p50) }),
            ("latency publish -> state: p99", styles.map { duration($0.latency.p99) }),
            ("latency publish -> state: p99.9", styles.map { duration($0.latency.p999) }),
            ("backlog: peak (not yet delivered)", styles.map { count(UInt64($0.timelineFindings.peakBacklog)) }),
            ("lost upstream (sequence gaps)", styles.map { count($0.lostUpstream) }),
            ("dropped at the local buffer", styles.map { count($0.droppedLocalBuffer) }),
            ("missed while hidden", styles.map { $0.style.isTask ? count($0.missedWhileHidden) : "-" }),
            ("discarded at end", styles.map { count($0.discardedAtEnd) }),
            ("replayed on reappear", styles.map { $0.style == .taskReplay ? count($0.replayed) : "-" }),
            ("unseen by sequence number", styles.map { count($0.unseenBySequence) }),
            ("gaps reported in-band (hidden)", styles.map { $0.style.isTask ? count($0.inBandHidden) : "-" }),
            ("delivered per second", styles.map { Format.rate($0.deliveredPerSecond) }),
            ("host CPU (user + system)", styles.map { String(format: "%.2f s", Double($0.cpuNanoseconds) / 1e9) }),
            ("host CPU per frame received", styles.map { Format.duration($0.cpuPerFrameNanoseconds) }),
            ("host peak RSS", styles.map { String(format: "%.1f MB", Double($0.peakResidentKiB) * 1_024 / 1e6) }),
            ("drain: catch-up after the last post", styles.map { duration($0.drainNanoseconds) + ($0.drainIncomplete ? " INCOMPLETE" : "") }),
            ("accounting identity", styles.map { $0.identityHolds ? "HOLDS" : "FAILS" }),
        ]
        if !rawRatios.isEmpty {
            func ratio(_ value: (ViewsRawRatio) -> Double?) -> [String] {
                styles.map { style in ViewsRawRatio.text(rawRatios.first { $0.style == style.style }.flatMap(value)) }
            }
            rows += [
                ("CPU per frame, times raw libzmq's", ratio(\.cpuPerFrame)),
                ("latency p50, times raw libzmq's", ratio(\.latencyP50)),
                ("latency p99, times raw libzmq's", ratio(\.latencyP99)),
                ("delivered/s, times raw libzmq's", ratio(\.deliveredPerSecond)),
                ("peak RSS, times raw libzmq's", ratio(\.peakResident)),
            ]
        }
        return rows
    }

    /// The baseline rows: a label and its cells under `baselineColumns`.
    func baselineTableRows() -> [(String, [String])] {
        var rows: [(String, [String])] = []
        if let raw = baselines.raw {
            rows.append((
                "[baseline] " + RawBaselineRow.label,
                [
                    Format.count(raw.delivered) + " of " + Format.count(raw.published), Format.rate(raw.deliveredPerSecond),
                    raw.latency.map { Format.duration(Double($0.p50)) } ?? "-",
                    raw.latency.map { Format.duration(Double($0.p99)) } ?? "-",
                    raw.latency.map { Format.duration(Double($0.p999)) } ?? "-",
                    String(format: "%.3f s", Double(raw.cpuNanoseconds) / 1e9), Format.duration(raw.cpuPerFrameNanoseconds),
                    String(format: "%.1f MB", Double(raw.peakResidentKiB) * 1_024 / 1e6),
                ]
            ))
        }
        if let foundation = baselines.foundation {
            rows.append((
                "[baseline] " + FoundationBaselineRow.label,
                [
                    Format.count(foundation.delivered) + " of " + Format.count(foundation.posted),
                    Format.rate(foundation.deliveredPerSecond), "-", "-", "-",
                    String(format: "%.3f s", Double(foundation.cpuNanoseconds) / 1e9),
                    Format.duration(foundation.cpuPerNotificationNanoseconds), "-",
                ]
            ))
        }
        return rows
    }

    /// The column titles of `baselineTableRows()`.
    static let baselineColumns = ["delivered", "delivered/s", "p50", "p99", "p99.9", "CPU", "CPU/msg", "peak RSS"]

    /// One line saying what the baselines ran (or why not).
    var baselineSummary: String {
        var parts: [String] = []
        if let raw = baselines.raw {
            let rate = raw.requestedRate.map { "\(Format.count($0))/s" } ?? "max rate"
            parts.append(
                "raw libzmq: \(raw.transport.rawValue), \(rate), \(raw.size) B payload (\(raw.frameBytes) B frame), XPUB NODROP, "
                    + "1 name, subscriber CPU (getrusage) and peak RSS (VmHWM) from itself")
        }
        if let foundation = baselines.foundation {
            parts.append("Foundation: \(Format.count(foundation.posted)) posts as fast as post returns, CPU of the posting thread")
        }
        parts += baselines.skipped
        return parts.joined(separator: "; ")
    }

    /// What each term of the report means, for the terminal and the page.
    package static let glossary: [(String, String)] = [
        ("onReceive", "an always-on handler: subscribed while its view exists, visible or not; every notification runs its action on the main actor and re-evaluates body."),
        ("task (main)", "a for-await loop that runs while its view is visible, written in body, so it runs on the main actor; it writes state (and renders) only for matching notifications."),
        ("task (off-main)", "the same loop in a nonisolated function declared outside body: it runs off the main actor and hops to it only to write state for a match."),
        ("task replay .all", "the off-main loop whose subscription keeps what arrives while the view is hidden (up to max) and hands it over on reappear."),
        ("published", "notifications the publisher posted to the names these views subscribe to."),
        ("delivered", "handed to the views' code (an onReceive action, or one loop iteration), live or replayed."),
        ("handled", "delivered and matching the views' condition: the code wrote state."),
        ("backlog", "published so far minus delivered and every loss counted so far: what is still queued (sockets, buffers, the main actor's queue), or was dropped upstream and not yet seen as a gap."),
        ("lost upstream", "sequence numbers that never arrived: dropped before this process (the publisher's high-water mark) or refused by its limits."),
        ("dropped at the local buffer", "discarded by a subscription's bounded buffer in the host process."),
        ("missed while hidden", "arrived while a task-style view was hidden and not kept for replay (by design for a plain task); reported to the loop as a gap."),
        ("unseen by sequence number", "sequence numbers the views' code never saw, counted from the numbers themselves: the cross-check of the causes above."),
        ("drain", "after the last post: how long each host took to account for every notification (catching up, replaying on reappear)."),
        ("kept up / fell behind", "a style fell behind when it was still catching up more than 1 s after the last post, or its latency passed 250 ms at the median or 1 s at p99 (latency not judged for replay, whose replayed notifications wait while hidden by design)."),
        ("main-actor busy", "time the main actor spent on these views' work (bodies, onReceive actions, main-actor loops), as the runtime accounts it."),
        ("main-actor wait", "how long a job enqueued on the main actor waited to run, sampled every 20 ms: what a user's tap would wait."),
        ("latency", "publish (the notification's wall-clock timestamp) to the state update it caused; onReceive: to the end of its action, every notification."),
        ("accounting identity", "per view: published = delivered + lost upstream + dropped at the local buffer + missed while hidden + discarded at end."),
    ]

    /// The report as a terminal table: the verdict first, the run context, the figures, the
    /// baselines, the identity per style, the targets and a glossary.
    /// `command` names what made it (`nbus demo`), as the page's title does.
    package func table(command: String = "nbus bench views") -> String {
        var lines: [String] = []
        lines.append("\(command): \(runSummary)")
        if context.buildConfiguration == "debug" {
            lines.append("")
            lines.append("WARNING: " + RunContext.debugWarning)
        }
        lines.append("")
        lines.append("Verdict: " + verdict.headline)
        for style in verdict.styles {
            lines.append("  [\(style.ok ? "ok" : "!!")] " + style.text)
        }
        lines.append("")
        lines.append("Run: " + context.lines.map { "\($0.0) \($0.1)" }.joined(separator: "; "))
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
        lines.append(Self.pad("", labelWidth, right: false) + styles.map { Self.pad($0.style.title, columnWidth) }.joined())
        for (label, cells) in rows {
            lines.append(Self.pad(label, labelWidth, right: false) + cells.map { Self.pad($0, columnWidth) }.joined())
        }
        if let retainedViews {
            lines.append("")
            lines.append(contentsOf: retainedViews.lines)
        }
        lines.append("")
        lines.append("Baselines, same invocation (\(baselineSummary))")
        let baselineRows = baselineTableRows()
        if !baselineRows.isEmpty {
            let baselineLabelWidth = baselineRows.map(\.0.count).max() ?? 0
            let widths = Self.baselineColumns.indices.map { column in
                max(Self.baselineColumns[column].count, baselineRows.map { $0.1[column].count }.max() ?? 0) + 2
            }
            lines.append(
                "  " + Self.pad("", baselineLabelWidth, right: false)
                    + zip(Self.baselineColumns, widths).map { Self.pad($0, $1) }.joined())
            for (label, cells) in baselineRows {
                lines.append("  " + Self.pad(label, baselineLabelWidth, right: false) + zip(cells, widths).map { Self.pad($0, $1) }.joined())
            }
        }
        lines.append("")
        lines.append("Accounting identity, per view: published = delivered + lost upstream + lost local buffer + lost hidden + discarded at end")
        for style in styles {
            let verdict = style.identityHolds ? "HOLDS" : "FAILS"
            lines.append(
                "  \(Self.pad(style.style.rawValue, 14, right: false)) \(Format.count(Int(style.published))) = "
                    + "\(Format.count(Int(style.delivered))) + \(Format.count(Int(style.lostUpstream))) + "
                    + "\(Format.count(Int(style.droppedLocalBuffer))) + \(Format.count(Int(style.missedWhileHidden))) + "
                    + "\(Format.count(Int(style.discardedAtEnd))) = \(Format.count(Int(style.accounted))): \(verdict)")
            for failure in style.identityFailures.prefix(5) { lines.append("      " + failure) }
        }
        lines.append("")
        lines.append("Targets (each judged only in the scenario it is defined for)")
        for target in targets {
            lines.append("  [\(target.verdict)] \(target.requirement)")
            lines.append("      defined for: \(target.scenario)")
            lines.append("      measured: \(target.measured)")
        }
        let flagged = verdict.styles.filter { !$0.ok }
        if !flagged.isEmpty {
            lines.append("")
            lines.append("Findings of this run (not targets: the run's own overload)")
            for style in flagged { lines.append("  " + style.text) }
        }
        lines.append("")
        lines.append("Glossary")
        for (term, meaning) in Self.glossary { lines.append("  \(term): \(meaning)") }
        if !failures.isEmpty {
            lines.append("")
            lines.append("ACCOUNTING FAILURES:")
            for failure in failures { lines.append("  " + failure) }
        }
        return lines.joined(separator: "\n")
    }

    static func pad(_ text: String, _ width: Int, right: Bool = true) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return right ? padding + text : text + padding
    }
}
