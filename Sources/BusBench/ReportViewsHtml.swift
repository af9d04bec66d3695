import Foundation

/// A grouped (optionally stacked) bar chart drawn as inline SVG: no script, no external asset.
///
/// `values[category][series][segment]`: one group of bars per category, one bar per series, one
/// stacked segment per segment name (a single segment draws plain bars in the series' colour).
/// Every category is labelled under its group (wrapped, never cut); series are named in the legend.
struct SVGBarChart {
    var title: String
    var unit: String
    var categories: [String]
    var series: [String]
    var segments: [String] = [""]
    var values: [[[Double]]]
    var logScale = false
    var format: (Double) -> String = { SVGBarChart.compact($0) }
    /// One colour per series (a style's colour is the same in every chart); nil: the palette.
    var colors: [String]? = nil

    static let seriesColors = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#9c755f"]
    static let segmentColors = ["#e15759", "#f28e2b", "#4e79a7", "#bab0ac", "#59a14f"]

    private let left = 70.0
    private let right = 14.0
    private let top = 48.0

    func color(ofSeries index: Int) -> String {
        if let colors, index < colors.count { return colors[index] }
        return Self.seriesColors[index % Self.seriesColors.count]
    }

    func svg() -> String {
        let stacked = segments.count > 1
        let legendEntries: [LegendEntry] =
            stacked
            ? segments.enumerated().map { LegendEntry(name: $0.element, color: Self.segmentColors[$0.offset % Self.segmentColors.count]) }
            : series.enumerated().map { LegendEntry(name: $0.element, color: color(ofSeries: $0.offset)) }
        let (legend, legendHeight) = SVGFrame.legend(legendEntries, left: left)
        let width = SVGFrame.width
        let plotWidth = width - left - right
        let groupWidth = plotWidth / Double(max(1, categories.count))
        // Category labels: wrapped to the group's width, shrunk if a word is still too long.
        let labelLines = categories.map { TextWidth.wrap($0, width: groupWidth - 8, size: 11) }
        let labelSize = labelLines.map { TextWidth.fitting($0, width: groupWidth - 8, size: 11) }.min() ?? 11
        let labelRows = Double(labelLines.map(\.count).max() ?? 1)
        let bottom = legendHeight + 12 + labelRows * (labelSize + 3)
        let plotHeight = SVGFrame.height - top - bottom
        let totals = values.flatMap { $0.map { $0.reduce(0, +) } }
        let axis = ChartAxis(values: totals, logScale: logScale)
        // Room above the top of the scale for the value over a bar that reaches it: without it
        // that value was drawn down inside its bar, over its neighbours' (issue 27.13).
        let headroom = Self.valueHeadroom
        let y: (Double) -> Double = { top + headroom + (plotHeight - headroom) * (1 - axis.position($0)) }

        var out = SVGFrame.open(title: title, unit: unit + (logScale ? " (log scale)" : ""))
        for tick in axis.ticks {
            let ty = y(tick)
            out += ##"<line x1="\##(Self.n(left))" y1="\##(Self.n(ty))" x2="\##(Self.n(width - right))" y2="\##(Self.n(ty))" stroke="#e3e3e3"/>"##
            out += ##"<text x="\##(Self.n(left - 6))" y="\##(Self.n(ty + 4))" font-size="10" text-anchor="end" fill="#555">\##(Self.escape(format(tick)))</text>"##
        }
        out += ##"<line x1="\##(Self.n(left))" y1="\##(Self.n(top + plotHeight))" x2="\##(Self.n(width - right))" y2="\##(Self.n(top + plotHeight))" stroke="#888"/>"##

        let barWidth = min(56, groupWidth * 0.84 / Double(max(1, series.count)))
        let groupInner = barWidth * Double(series.count)
        for (c, category) in categories.enumerated() {
            let groupLeft = left + groupWidth * Double(c) + (groupWidth - groupInner) / 2
            for (s, name) in series.enumerated() {
                let x = groupLeft + barWidth * Double(s)
                let parts = c < values.count && s < values[c].count ? values[c][s] : []
                var base = 0.0
                for (g, part) in parts.enumerated() where part > 0 {
                    let y0 = logScale && base == 0 ? top + plotHeight : y(base)
                    let y1 = y(base + part)
                    let fill = stacked ? Self.segmentColors[g % Self.segmentColors.count] : color(ofSeries: s)
                    let label = stacked ? "\(name), \(segments[g]): \(format(part))" : "\(name), \(category): \(format(part))"
                    out += ##"<rect x="\##(Self.n(x + 1))" y="\##(Self.n(min(y0, y1)))" width="\##(Self.n(max(1, barWidth - 2)))" "##
                    out += ##"height="\##(Self.n(max(0.5, abs(y0 - y1))))" fill="\##(fill)"><title>\##(Self.escape(label))</title></rect>"##
                    base += part
                }
                // The value over its bar, where it fits the bar's width.
                let total = parts.reduce(0, +)
                let text = format(total)
                let size = TextWidth.fitting([text], width: barWidth, size: 9)
                if size >= 6 {
                    out += ##"<text class="value" x="\##(Self.n(x + barWidth / 2))" y="\##(Self.n(y(total) - 3))" font-size="\##(Self.n(size))" "##
                    out += ##"text-anchor="middle" fill="#333">\##(Self.escape(text))</text>"##
                }
            }
            for (line, text) in labelLines[c].enumerated() {
                let labelY = top + plotHeight + 4 + (labelSize + 3) * Double(line + 1)
                out += ##"<text x="\##(Self.n(left + groupWidth * (Double(c) + 0.5)))" y="\##(Self.n(labelY))" font-size="\##(Self.n(labelSize))" "##
                out += ##"text-anchor="middle" fill="#222">\##(Self.escape(text))</text>"##
            }
        }
        out += legend
        out += "</svg>"
        return out
    }

    /// Pixels kept above the scale's top for the values over the bars (a 9 px label and 3 px gap).
    static let valueHeadroom = 12.0

    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let magnitude = pow(10, floor(log10(raw)))
        let fraction = raw / magnitude
        let nice: Double = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 2.5 ? 2.5 : fraction <= 5 ? 5 : 10
        return nice * magnitude
    }

    /// A count with k / M suffixes (for counts, never for times: those use `Format.duration`).
    static func compact(_ value: Double) -> String {
        let magnitude = abs(value)
        if magnitude >= 1e9 { return String(format: "%.3gG", value / 1e9) }
        if magnitude >= 1e6 { return String(format: "%.3gM", value / 1e6) }
        if magnitude >= 1e3 { return String(format: "%.3gk", value / 1e3) }
        if magnitude == 0 { return "0" }
        return String(format: "%.3g", value)
    }

    static func n(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}

/// The self-contained HTML page of `nbus demo`, `nbus bench views --html` and `nbus bench sweep --html`.
package enum ViewsHTMLReport {
    /// The page for one scenario: verdict, run context, time series, summary charts, tables,
    /// targets and glossary. `title` names the command that made it.
    package static func page(for report: ViewsReport, title: String = "nbus bench views") -> String {
        let styles = report.styles
        let names = styles.map(\.style.title)
        let colors = styles.map { ReportColors.color(of: $0.style) }
        let duration = { (ns: Double) in Format.duration(ns) }
        let raw = report.baselines.raw
        let rawName = "raw libzmq (baseline)"
        let foundationName = "Foundation NotificationCenter (baseline)"

        // Time series.
        func lines(_ value: (TimelinePoint) -> Double?) -> [SVGLineChart.Series] {
            styles.map { style in
                SVGLineChart.Series(
                    name: style.style.title, color: ReportColors.color(of: style.style), dashPattern: style.style.dashPattern,
                    points: style.timeline.map { ($0.seconds, value($0)) })
            }
        }
        let end = report.postingSeconds
        let marks = report.visibilityChangeSeconds
        var series: [SVGLineChart] = []
        var delivered = lines { $0.deliveredPerSecond }
        if let first = styles.first {
            delivered.append(
                SVGLineChart.Series(
                    name: "published to each style's views", color: ReportColors.published, dashed: true,
                    points: first.timeline.map { ($0.seconds, $0.publishedPerSecond) }))
        }
        series.append(SVGLineChart(
            title: "Delivered per second, over time", unit: "notifications handed to the views' code per second (250 ms intervals)",
            series: delivered, postingEnd: end, marks: marks, format: { SVGBarChart.compact($0) + "/s" }))
        series.append(SVGLineChart(
            title: "Backlog: published, not yet delivered or counted lost", unit: "notifications queued (sockets, buffers, main actor)",
            series: lines { $0.backlog }, postingEnd: end, marks: marks))
        series.append(SVGLineChart(
            title: "Latency p50 per interval: publish to state update", unit: "median of the updates made in each 250 ms interval",
            series: lines { $0.latencyP50.map { Double($0) } }, postingEnd: end, marks: marks, logScale: true, format: duration))
        series.append(SVGLineChart(
            title: "Latency p99 per interval: publish to state update", unit: "99th percentile of each 250 ms interval",
            series: lines { $0.latencyP99.map { Double($0) } }, postingEnd: end, marks: marks, logScale: true, format: duration))
        series.append(SVGLineChart(
            title: "Main-actor busy per interval", unit: "% of each 250 ms interval spent on the views' work (runtime accounting)",
            series: lines { $0.mainActorBusyPercent }, postingEnd: end, marks: marks, format: { String(format: "%g%%", $0) }))
        series.append(SVGLineChart(
            title: "Lost upstream per second", unit: "sequence gaps: dropped before the host (publisher's high-water mark)",
            series: lines { $0.lostUpstreamPerSecond }, postingEnd: end, marks: marks, format: { SVGBarChart.compact($0) + "/s" }))
        series.append(SVGLineChart(
            title: "Missed while hidden per second", unit: "arrived while a task's view was hidden, not kept (by design for a plain task)",
            series: lines { $0.missedWhileHiddenPerSecond }, postingEnd: end, marks: marks, format: { SVGBarChart.compact($0) + "/s" }))
        if styles.contains(where: { $0.droppedLocalBuffer > 0 }) {
            series.append(SVGLineChart(
                title: "Dropped at the local buffer per second", unit: "discarded by a subscription's bounded buffer in the host",
                series: lines { $0.droppedLocalBufferPerSecond }, postingEnd: end, marks: marks,
                format: { SVGBarChart.compact($0) + "/s" }))
        }
        if styles.contains(where: { $0.replayed > 0 }) {
            series.append(SVGLineChart(
                title: "Replayed on reappear per second", unit: "kept while hidden, handed over when the view showed again",
                series: lines { $0.replayedPerSecond }, postingEnd: end, marks: marks, format: { SVGBarChart.compact($0) + "/s" }))
        }

        // Totals.
        var charts: [SVGBarChart] = []
        var latencySeries = names
        var latencyColors = colors
        var latencyValues = [[[Double]]](repeating: [], count: 3)
        for style in styles {
            for (index, value) in [style.latency.p50, style.latency.p99, style.latency.p999].enumerated() {
                latencyValues[index].append([Double(value)])
            }
        }
        if let latency = raw?.latency {
            latencySeries.append(rawName)
            latencyColors.append(ReportColors.rawBaseline)
            for (index, value) in [latency.p50, latency.p99, latency.p999].enumerated() { latencyValues[index].append([Double(value)]) }
        }
        charts.append(SVGBarChart(
            title: "Latency over the run: publish to state update", unit: "whole run (raw libzmq: send to receipt)",
            categories: ["p50", "p99", "p99.9"], series: latencySeries, values: latencyValues, logScale: true, format: duration,
            colors: latencyColors))
        charts.append(SVGBarChart(
            title: "Main-actor busy over the run", unit: "% of the host's run spent on the views' work (bodies, actions, main-actor loops)",
            categories: ["share of the main actor"], series: names, values: [styles.map { [$0.mainActorBusyPercent] }],
            format: { String(format: "%.3g%%", $0) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Main-actor responsiveness", unit: "how long a job enqueued on the main actor waited (sampled every 20 ms)",
            categories: ["p50", "p99"], series: names,
            values: [styles.map { [Double($0.mainActorPing.p50)] }, styles.map { [Double($0.mainActorPing.p99)] }], logScale: true,
            format: duration, colors: colors))
        charts.append(SVGBarChart(
            title: "Renders: body evaluations against notifications", unit: "counts over the run",
            categories: ["body evaluations", "delivered", "handled (matching)"], series: names,
            values: [styles.map { [Double($0.bodyEvaluations)] }, styles.map { [Double($0.delivered)] }, styles.map { [Double($0.handled)] }],
            colors: colors))
        charts.append(SVGBarChart(
            title: "Losses by cause", unit: "notifications over the run",
            categories: ["lost upstream", "dropped locally", "missed while hidden", "discarded at end"], series: names,
            values: [
                styles.map { [Double($0.lostUpstream)] }, styles.map { [Double($0.droppedLocalBuffer)] },
                styles.map { [Double($0.missedWhileHidden)] }, styles.map { [Double($0.discardedAtEnd)] },
            ], colors: colors))
        var cpuSeries = names
        var cpuColors = colors
        var cpuValues = styles.map { [$0.cpuPerFrameNanoseconds] }
        if let raw {
            cpuSeries.append(rawName)
            cpuColors.append(ReportColors.rawBaseline)
            cpuValues.append([raw.cpuPerFrameNanoseconds])
        }
        if let foundation = report.baselines.foundation {
            cpuSeries.append(foundationName)
            cpuColors.append(ReportColors.foundationBaseline)
            cpuValues.append([foundation.cpuPerNotificationNanoseconds])
        }
        charts.append(SVGBarChart(
            title: "CPU per notification, against the baselines",
            unit: "host CPU per frame received; raw subscriber per frame; Foundation post + observer",
            categories: ["CPU time per notification"], series: cpuSeries, values: [cpuValues], logScale: true, format: duration,
            colors: cpuColors))
        charts.append(SVGBarChart(
            title: "Subscriber CPU over the run", unit: "seconds of CPU (user + system) in each host's run",
            categories: ["CPU seconds"], series: names, values: [styles.map { [Double($0.cpuNanoseconds)] }], format: duration,
            colors: colors))
        var memorySeries = names
        var memoryColors = colors
        var memoryValues = styles.map { [Double($0.peakResidentKiB) * 1_024 / 1e6] }
        if let raw {
            memorySeries.append(rawName)
            memoryColors.append(ReportColors.rawBaseline)
            memoryValues.append([Double(raw.peakResidentKiB) * 1_024 / 1e6])
        }
        charts.append(SVGBarChart(
            title: "Subscriber peak memory", unit: "peak resident set (VmHWM), MB", categories: ["peak RSS"], series: memorySeries,
            values: [memoryValues], format: { String(format: "%.3g MB", $0) }, colors: memoryColors))

        var body = header(title: title, subtitle: report.runSummary, date: report.date)
        body += debugWarning(report.context)
        body += verdictSection(report.verdict)
        body += contextSection(report.context)
        body += publisherParagraph(report)
        body += "<h2>Over time</h2>\n<p class=\"note\">Sampled every 250 ms in each host. Ticks along the time axis: "
            + "the first host's tab switches; shaded: the drain after the last post.</p>\n"
        body += chartGrid(series.map { $0.svg() })
        body += "<h2>Over the whole run</h2>\n"
        body += chartGrid(charts.map { $0.svg() })
        body += "<h2>Figures</h2>\n"
        body += tableSection(report)
        body += report.retainedViews.map(retainedViewsSection) ?? ""
        body += baselineSection(report)
        body += identitySection(report)
        body += targetSection(report.targets, heading: "Targets")
        body += findingsSection(report.verdict)
        body += failureSection(report.failures)
        body += glossarySection()
        return document(title: title, body: body)
    }
    /// The page for a sweep: a chart per figure against the swept parameter, bars per style.
    package static func page(for sweep: ViewsSweepReport) -> String {
        let styles = sweep.styles
        let names = styles.map(\.title)
        let colors = styles.map(ReportColors.color(of:))
        let labels = sweep.labels
        func grid(_ value: (ViewsStyleSummary) -> Double) -> [[[Double]]] {
            sweep.runs.map { run in styles.map { style in run.summary(style).map { [value($0)] } ?? [0] } }
        }
        let axis = sweep.parameter.title
        var charts: [SVGBarChart] = []
        charts.append(SVGBarChart(
            title: "Throughput vs \(axis)", unit: "delivered per second of publishing", categories: labels, series: names,
            values: grid(\.deliveredPerSecond), colors: colors))
        charts.append(SVGBarChart(
            title: "Latency p50 vs \(axis)", unit: "publish to state update", categories: labels,
            series: names, values: grid { Double($0.latency.p50) }, logScale: true, format: { Format.duration($0) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Latency p99 vs \(axis)", unit: "publish to state update", categories: labels,
            series: names, values: grid { Double($0.latency.p99) }, logScale: true, format: { Format.duration($0) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Main-actor busy vs \(axis)", unit: "% of the host's window (runtime accounting)", categories: labels,
            series: names, values: grid(\.mainActorBusyPercent), format: { String(format: "%.3g%%", $0) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Main-actor responsiveness p99 vs \(axis)", unit: "how long a main-actor job waited",
            categories: labels, series: names, values: grid { Double($0.mainActorPing.p99) }, logScale: true,
            format: { Format.duration($0) }, colors: colors))
        charts.append(SVGBarChart(
            title: "body evaluations vs \(axis)", unit: "count", categories: labels, series: names,
            values: grid { Double($0.bodyEvaluations) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Lost upstream or dropped locally vs \(axis)", unit: "notifications (sequence gaps + local-buffer drops)",
            categories: labels, series: names, values: grid { Double($0.lostUpstream + $0.droppedLocalBuffer) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Missed while hidden vs \(axis)", unit: "notifications a task's hidden view did not keep",
            categories: labels, series: names, values: grid { Double($0.missedWhileHidden) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Subscriber CPU vs \(axis)", unit: "seconds (user + system)", categories: labels, series: names,
            values: grid { Double($0.cpuNanoseconds) / 1e9 }, format: { String(format: "%.3g", $0) }, colors: colors))
        charts.append(SVGBarChart(
            title: "Subscriber peak RSS vs \(axis)", unit: "MB", categories: labels, series: names,
            values: grid { Double($0.peakResidentKiB) * 1_024 / 1e6 }, format: { String(format: "%.3g", $0) }, colors: colors))
        let title = "nbus bench sweep \(sweep.parameter.rawValue)"
        var body = header(
            title: title, subtitle: "values \(labels.joined(separator: ", ")); first run: \(sweep.runs.first?.scenario.summary ?? "")",
            date: sweep.runs.first?.date ?? Date())
        if let first = sweep.runs.first {
            body += debugWarning(first.context)
            body += contextSection(first.context)
        }
        body += chartGrid(charts.map { $0.svg() })
        for (label, run) in zip(labels, sweep.runs) {
            body += "<h2>\(SVGBarChart.escape(sweep.parameter.rawValue)) = \(SVGBarChart.escape(label))</h2>\n"
            body += publisherParagraph(run)
            body += tableSection(run)
            body += baselineSection(run)
            body += identitySection(run)
            body += verdictSection(run.verdict)
            body += targetSection(run.targets, heading: nil)
        }
        body += failureSection(sweep.failures)
        return document(title: title, body: body)
    }

    // MARK: Pieces

    private static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>\(SVGBarChart.escape(title))</title>
        <style>
        body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; background: #fafafa; }
        h1 { font-size: 22px; margin-bottom: 4px; }
        h2 { font-size: 17px; margin-top: 28px; }
        .sub { color: #555; margin-top: 0; }
        .note { color: #555; font-size: 13px; }
        .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 12px; }
        .charts svg { border: 1px solid #ddd; background: #fff; width: 100%; height: auto; display: block; }
        .verdict { background: #fff; border: 1px solid #ccc; border-left: 6px solid #1a7f37; padding: 8px 14px; }
        .verdict.flagged { border-left-color: #c62828; }
        .verdict .headline { font-size: 16px; font-weight: bold; }
        .verdict li { margin: 4px 0; }
        .verdict li.bad { color: #c62828; }
        .warning { background: #fff4e5; border: 1px solid #e0a040; padding: 8px 14px; font-weight: bold; }
        .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
        dl.glossary dt { font-weight: bold; margin-top: 6px; }
        dl.glossary dd { margin-left: 18px; }
        .scroll { overflow-x: auto; }
        table { border-collapse: collapse; font-size: 13px; background: #fff; }
        th, td { border: 1px solid #ddd; padding: 3px 8px; overflow-wrap: anywhere; }
        td.n { text-align: right; font-variant-numeric: tabular-nums; }
        th { background: #f0f0f0; }
        .met { color: #1a7f37; font-weight: bold; }
        .notmet { color: #c62828; font-weight: bold; }
        .na { color: #777; }
        pre { background: #fff; border: 1px solid #ddd; padding: 8px; overflow-x: auto; }
        </style>
        </head>
        <body>
        \(body)
        </body>
        </html>

        """
    }

    private static func header(title: String, subtitle: String, date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        return "<h1>\(SVGBarChart.escape(title))</h1>\n<p class=\"sub\">\(SVGBarChart.escape(subtitle))<br>"
            + "measured \(formatter.string(from: date))</p>\n"
    }

    private static func publisherParagraph(_ report: ViewsReport) -> String {
        report.publishers.map { publisher in
            "<p>publisher: posted \(Format.count(Int(publisher.posted))) in \(Format.nanoseconds(Double(publisher.postNanoseconds))) "
                + "(\(Format.rate(publisher.postRate))/s, stopped by \(SVGBarChart.escape(publisher.stoppedBy)))</p>\n"
        }.joined()
    }

    private static func chartGrid(_ charts: [String]) -> String {
        "<div class=\"charts\">\n" + charts.map { $0 + "\n" }.joined() + "</div>\n"
    }

    private static func debugWarning(_ context: RunContext) -> String {
        guard context.buildConfiguration == "debug" else { return "" }
        return "<p class=\"warning\">\(SVGBarChart.escape(RunContext.debugWarning))</p>\n"
    }

    private static func verdictSection(_ verdict: ViewsVerdict) -> String {
        let flagged = verdict.styles.contains { !$0.ok }
        var html = "<div class=\"verdict\(flagged ? " flagged" : "")\">\n<p class=\"headline\">\(SVGBarChart.escape(verdict.headline))</p>\n<ul>\n"
        for style in verdict.styles {
            html += "<li class=\"\(style.ok ? "ok" : "bad")\"><span class=\"swatch\" style=\"background:\(ReportColors.color(of: style.style))\"></span>"
                + SVGBarChart.escape(style.text) + "</li>\n"
        }
        return html + "</ul>\n</div>\n"
    }

    private static func contextSection(_ context: RunContext) -> String {
        var html = "<h2>Run</h2>\n<table class=\"context\">\n"
        for (label, value) in context.lines {
            html += "<tr><th style=\"text-align:left\">\(SVGBarChart.escape(label))</th><td>\(SVGBarChart.escape(value))</td></tr>\n"
        }
        return html + "</table>\n"
    }

    private static func glossarySection() -> String {
        var html = "<h2>Glossary</h2>\n<dl class=\"glossary\">\n"
        for (term, meaning) in ViewsReport.glossary {
            html += "<dt>\(SVGBarChart.escape(term))</dt><dd>\(SVGBarChart.escape(meaning))</dd>\n"
        }
        html += "</dl>\n"
        html += "<p class=\"note\">The trade-off measured here is the one Fatbobman describes in "
            + "<a href=\"https://fatbobman.com/en/posts/mastering_swiftui_task_modifier/\">Mastering the SwiftUI task Modifier</a>; "
            + "the claims the tests pin down are listed in the repository's docs/articles.md.</p>\n"
        return html
    }

    /// `nbus demo`'s retained-views step: what each view showed first, and when (issue 39).
    static func retainedViewsSection(_ result: RetainedViewsResult) -> String {
        func ms(_ ns: Int64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
        let e = SVGBarChart.escape
        var html = "<h2>A view that appears after the last post (retained values)</h2>\n"
        html += "<p>The publisher process posted <code>\(e(result.name))</code> = \(e(result.currentValue)) retained "
            + "before any view existed. A host process then showed two views of it; "
            + "\(ms(Int64(clamping: result.changeDelayNanoseconds))) after they were ready the publisher changed it to "
            + "\(e(result.changedValue)).</p>\n"
        html += "<table>\n<tr><th>view</th><th>first value shown</th><th>after it appeared</th><th>before the next post?</th></tr>\n"
        let rows: [(String, RetainedViewsResult.FirstShown, Int64)] = [
            ("onReceive, start: .retained", result.retainedView, result.retainedFirstNanoseconds),
            ("onReceive, start: .now (the default)", result.defaultView, result.defaultFirstNanoseconds),
        ]
        for (label, shown, delay) in rows {
            let before = shown.wallNanoseconds < result.changeWallNanoseconds
            html += "<tr><td>\(e(label))</td><td>\(e(shown.value))\(shown.isRetained ? " (retained: the current value)" : " (a change)")</td>"
                + "<td>\(ms(delay))</td><td>\(before ? "yes: at once" : "no: it waited for the change")</td></tr>\n"
        }
        html += "</table>\n<p class=\"note\">The view with <code>start: .retained</code> has the current value "
            + "\(ms(result.retainedFirstNanoseconds)) after it appears; the default one shows nothing until the next change "
            + "(\(ms(result.defaultFirstNanoseconds)), of which \(ms(result.defaultAfterChangeNanoseconds)) after that post).</p>\n"
        return html
    }

    private static func tableSection(_ report: ViewsReport) -> String {
        var html = "<div class=\"scroll\"><table>\n<tr><th></th>"
        for style in report.styles { html += "<th>\(SVGBarChart.escape(style.style.title))</th>" }
        html += "</tr>\n"
        for (label, cells) in report.tableRows() {
            html += "<tr><th style=\"text-align:left\">\(SVGBarChart.escape(label))</th>"
            for cell in cells { html += "<td class=\"n\">\(SVGBarChart.escape(cell))</td>" }
            html += "</tr>\n"
        }
        return html + "</table></div>\n"
    }

    private static func baselineSection(_ report: ViewsReport) -> String {
        var html = "<h2>Baselines (same invocation)</h2>\n<p>\(SVGBarChart.escape(report.baselineSummary))</p>\n"
        let rows = report.baselineTableRows()
        guard !rows.isEmpty else { return html }
        html += "<table>\n<tr><th></th>"
        for column in ViewsReport.baselineColumns { html += "<th>\(SVGBarChart.escape(column))</th>" }
        html += "</tr>\n"
        for (label, cells) in rows {
            html += "<tr><th style=\"text-align:left\">\(SVGBarChart.escape(label))</th>"
            for cell in cells { html += "<td class=\"n\">\(SVGBarChart.escape(cell))</td>" }
            html += "</tr>\n"
        }
        return html + "</table>\n"
    }

    private static func identitySection(_ report: ViewsReport) -> String {
        var text = "published = delivered + lost upstream + lost local buffer + lost hidden + discarded at end (per view)\n"
        for style in report.styles {
            text += "\(style.style.rawValue): \(style.published) = \(style.delivered) + \(style.lostUpstream) + "
                + "\(style.droppedLocalBuffer) + \(style.missedWhileHidden) + \(style.discardedAtEnd) = \(style.accounted): "
                + (style.identityHolds ? "HOLDS" : "FAILS") + "\n"
            for failure in style.identityFailures.prefix(5) { text += "    \(failure)\n" }
        }
        return "<h2>Accounting identity</h2>\n<pre>\(SVGBarChart.escape(text))</pre>\n"
    }

    private static func targetSection(_ targets: [ViewsTarget], heading: String?) -> String {
        var html = heading.map { "<h2>\(SVGBarChart.escape($0))</h2>\n" } ?? ""
        html += "<ul>\n"
        for target in targets {
            let css = target.met == true ? "met" : target.met == false ? "notmet" : "na"
            html += "<li><span class=\"\(css)\">\(SVGBarChart.escape(target.verdict))</span> "
                + "\(SVGBarChart.escape(target.requirement))<br><small>defined for: \(SVGBarChart.escape(target.scenario))"
                + "<br>measured: \(SVGBarChart.escape(target.measured))</small></li>\n"
        }
        return html + "</ul>\n"
    }

    /// What went wrong in this run that no target covers: a style that fell behind or lost
    /// notifications its design does not accept, red, next to the targets rather than hidden by them.
    private static func findingsSection(_ verdict: ViewsVerdict) -> String {
        let flagged = verdict.styles.filter { !$0.ok }
        guard !flagged.isEmpty else { return "" }
        var html = "<h2 class=\"notmet\">Findings of this run (not targets)</h2>\n<ul>\n"
        for style in flagged { html += "<li class=\"notmet\">\(SVGBarChart.escape(style.text))</li>\n" }
        return html + "</ul>\n"
    }

    private static func failureSection(_ failures: [String]) -> String {
        guard !failures.isEmpty else { return "" }
        return "<h2 class=\"notmet\">Accounting failures</h2>\n<pre>"
            + SVGBarChart.escape(failures.joined(separator: "\n")) + "</pre>\n"
    }
}
