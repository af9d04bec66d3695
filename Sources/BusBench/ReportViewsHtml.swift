import Foundation

/// A grouped (optionally stacked) bar chart drawn as inline SVG: no script, no external asset.
///
/// `values[category][series][segment]`: one group of bars per category, one bar per series, one
/// stacked segment per segment name (a single segment draws plain bars in the series' colour).
struct SVGBarChart {
    var title: String
    var unit: String
    var categories: [String]
    var series: [String]
    var segments: [String] = [""]
    var values: [[[Double]]]
    var logScale = false
    var format: (Double) -> String = { SVGBarChart.compact($0) }

    static let seriesColors = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#9c755f"]
    static let segmentColors = ["#e15759", "#f28e2b", "#4e79a7", "#bab0ac", "#59a14f"]

    let width = 660.0
    let height = 320.0
    let left = 72.0
    let right = 16.0
    let top = 56.0
    let bottom = 64.0

    func svg() -> String {
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let stacked = segments.count > 1
        let totals = values.flatMap { $0.map { $0.reduce(0, +) } }
        let maximum = max(totals.max() ?? 0, 0)
        var out = ""
        out += ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(Int(width))" height="\##(Int(height))" "##
        out += ##"viewBox="0 0 \##(Int(width)) \##(Int(height))" role="img" aria-label="\##(Self.escape(title))" "##
        out += ##"font-family="Helvetica, Arial, sans-serif">"##
        out += ##"<rect x="0" y="0" width="\##(Int(width))" height="\##(Int(height))" fill="#ffffff"/>"##
        out += ##"<text x="\##(Int(left))" y="20" font-size="15" font-weight="bold" fill="#222">\##(Self.escape(title))</text>"##
        out += ##"<text x="\##(Int(left))" y="36" font-size="11" fill="#666">\##(Self.escape(unit))\##(logScale ? " (log scale)" : "")</text>"##

        // Scale.
        let ticks: [Double]
        let y: (Double) -> Double
        if logScale {
            let positive = totals.filter { $0 > 0 }
            let low = floor(log10(max(positive.min() ?? 1, 1e-9)))
            let high = max(low + 1, ceil(log10(max(maximum, 1e-9))))
            ticks = stride(from: low, through: high, by: 1).map { pow(10, $0) }
            y = { value in
                let clamped = max(value, pow(10, low))
                return top + plotHeight * (1 - (log10(clamped) - low) / (high - low))
            }
        } else {
            let step = Self.niceStep(maximum / 5)
            let top = step * ceil(max(maximum, step) / step)
            ticks = stride(from: 0, through: top + step / 2, by: step).map { $0 }
            let plotTop = self.top
            y = { value in plotTop + plotHeight * (1 - min(max(value, 0), top) / top) }
        }
        for tick in ticks {
            let ty = y(tick)
            out += ##"<line x1="\##(Self.n(left))" y1="\##(Self.n(ty))" x2="\##(Self.n(width - right))" y2="\##(Self.n(ty))" stroke="#e3e3e3"/>"##
            out += ##"<text x="\##(Self.n(left - 6))" y="\##(Self.n(ty + 4))" font-size="10" text-anchor="end" fill="#555">\##(Self.escape(format(tick)))</text>"##
        }
        out += ##"<line x1="\##(Self.n(left))" y1="\##(Self.n(top + plotHeight))" x2="\##(Self.n(width - right))" y2="\##(Self.n(top + plotHeight))" stroke="#888"/>"##

        // Bars.
        let groupWidth = plotWidth / Double(max(1, categories.count))
        let barWidth = min(56, groupWidth * 0.8 / Double(max(1, series.count)))
        let groupInner = barWidth * Double(series.count)
        for (c, category) in categories.enumerated() {
            let groupLeft = left + groupWidth * Double(c) + (groupWidth - groupInner) / 2
            for (s, name) in series.enumerated() {
                let x = groupLeft + barWidth * Double(s)
                let parts = c < values.count && s < values[c].count ? values[c][s] : []
                var base = 0.0
                for (g, part) in parts.enumerated() where part > 0 {
                    let y0 = y(base)
                    let y1 = y(base + part)
                    let color = stacked ? Self.segmentColors[g % Self.segmentColors.count] : Self.seriesColors[s % Self.seriesColors.count]
                    let label = stacked ? "\(name) \(segments[g]): \(format(part))" : "\(name): \(format(part))"
                    out += ##"<rect x="\##(Self.n(x + 1))" y="\##(Self.n(min(y0, y1)))" width="\##(Self.n(max(1, barWidth - 2)))" "##
                    out += ##"height="\##(Self.n(max(0.5, abs(y0 - y1))))" fill="\##(color)"><title>\##(Self.escape(label))</title></rect>"##
                    base += part
                }
                let total = parts.reduce(0, +)
                out += ##"<text x="\##(Self.n(x + barWidth / 2))" y="\##(Self.n(y(total) - 4))" font-size="9" text-anchor="middle" fill="#333">\##(Self.escape(format(total)))</text>"##
                if series.count > 1 && categories.count > 1 {
                    out += ##"<text x="\##(Self.n(x + barWidth / 2))" y="\##(Self.n(top + plotHeight + 12))" font-size="8" text-anchor="middle" fill="#777">\##(Self.escape(Self.abbreviation(name)))</text>"##
                }
            }
            let labelY = top + plotHeight + (series.count > 1 && categories.count > 1 ? 26 : 16)
            out += ##"<text x="\##(Self.n(left + groupWidth * (Double(c) + 0.5)))" y="\##(Self.n(labelY))" font-size="11" text-anchor="middle" fill="#222">\##(Self.escape(category))</text>"##
        }

        // Legend.
        let legend: [(String, String)] =
            stacked
            ? segments.enumerated().map { ($0.element, Self.segmentColors[$0.offset % Self.segmentColors.count]) }
            : series.count > 1 ? series.enumerated().map { ($0.element, Self.seriesColors[$0.offset % Self.seriesColors.count]) } : []
        // Entries in rows that fit the width, the last row at the bottom.
        var rows: [[(String, String, Double)]] = [[]]
        var rowWidth = 0.0
        for (name, color) in legend {
            let entryWidth = 24 + Double(name.count) * 5.6
            if rowWidth + entryWidth > width - left - right, !(rows.last?.isEmpty ?? true) {
                rows.append([])
                rowWidth = 0
            }
            rows[rows.count - 1].append((name, color, rowWidth))
            rowWidth += entryWidth
        }
        for (index, row) in rows.enumerated() {
            let legendY = height - 14 - 13 * Double(rows.count - 1 - index)
            for (name, color, offset) in row {
                let legendX = left + offset
                out += ##"<rect x="\##(Self.n(legendX))" y="\##(Self.n(legendY - 9))" width="10" height="10" fill="\##(color)"/>"##
                out += ##"<text x="\##(Self.n(legendX + 14))" y="\##(Self.n(legendY))" font-size="10" fill="#333">\##(Self.escape(name))</text>"##
            }
        }
        out += "</svg>"
        return out
    }

    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let magnitude = pow(10, floor(log10(raw)))
        let fraction = raw / magnitude
        let nice: Double = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 2.5 ? 2.5 : fraction <= 5 ? 5 : 10
        return nice * magnitude
    }

    static func compact(_ value: Double) -> String {
        let magnitude = abs(value)
        if magnitude >= 1e9 { return String(format: "%.3gG", value / 1e9) }
        if magnitude >= 1e6 { return String(format: "%.3gM", value / 1e6) }
        if magnitude >= 1e3 { return String(format: "%.3gk", value / 1e3) }
        if magnitude == 0 { return "0" }
        return String(format: "%.3g", value)
    }

    static func abbreviation(_ name: String) -> String {
        switch name {
        case ViewStyle.onReceive.title: return "onRcv"
        case ViewStyle.taskMain.title: return "main"
        case ViewStyle.taskOffMain.title: return "off"
        case ViewStyle.taskReplay.title: return "replay"
        default: return String(name.prefix(6))
        }
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

/// The self-contained HTML page of `nbus bench views --html` and `nbus bench sweep --html`.
public enum ViewsHTMLReport {
    /// The page for one scenario: a chart per figure, bars per style.
    public static func page(for report: ViewsReport) -> String {
        let styles = report.styles
        let names = styles.map(\.style.title)
        func one(_ value: (ViewsStyleSummary) -> Double) -> [[[Double]]] { [styles.map { [value($0)] }] }
        func perStyle(_ values: (ViewsStyleSummary) -> [Double]) -> [[[Double]]] { styles.map { values($0).map { [$0] } } }
        let raw = report.baselines.raw
        let rawName = "raw libzmq (baseline)"
        let foundationName = "Foundation NC (baseline)"
        var charts: [SVGBarChart] = []
        charts.append(SVGBarChart(
            title: "Throughput: delivered to the views' code", unit: "notifications per second of publishing; raw libzmq at the same rate",
            categories: [""], series: names + (raw == nil ? [] : [rawName]),
            values: [styles.map { [$0.deliveredPerSecond] } + (raw.map { [[$0.deliveredPerSecond]] } ?? [])]))
        var latencyValues = perStyle { [Double($0.latency.p50), Double($0.latency.p99), Double($0.latency.p999)].map { $0 / 1e3 } }
        var latencyCategories = names
        if let latency = raw?.latency {
            latencyCategories.append(rawName)
            latencyValues.append([Double(latency.p50), Double(latency.p99), Double(latency.p999)].map { [$0 / 1e3] })
        }
        charts.append(SVGBarChart(
            title: "Latency: publish to state update", unit: "microseconds: p50, p99, p99.9 (raw libzmq: send to receipt)",
            categories: latencyCategories, series: ["p50", "p99", "p99.9"], values: latencyValues, logScale: true))
        charts.append(SVGBarChart(
            title: "CPU per message, against the baselines",
            unit: "microseconds: host CPU per frame received; raw subscriber per frame; Foundation post + observer",
            categories: [""],
            series: names + (raw == nil ? [] : [rawName]) + (report.baselines.foundation == nil ? [] : [foundationName]),
            values: [
                styles.map { [$0.cpuPerFrameNanoseconds / 1e3] } + (raw.map { [[$0.cpuPerFrameNanoseconds / 1e3]] } ?? [])
                    + (report.baselines.foundation.map { [[$0.cpuPerNotificationNanoseconds / 1e3]] } ?? [])
            ],
            logScale: true))
        charts.append(SVGBarChart(
            title: "Main-actor busy", unit: "% of the host's window (bodies, onReceive actions, main-actor loops)",
            categories: [""], series: names, values: one(\.mainActorBusyPercent), format: { String(format: "%.3g", $0) }))
        charts.append(SVGBarChart(
            title: "Main-actor responsiveness", unit: "microseconds a main-actor job waited: p50, p99",
            categories: names, series: ["p50", "p99"],
            values: perStyle { [Double($0.mainActorPing.p50) / 1e3, Double($0.mainActorPing.p99) / 1e3] }, logScale: true))
        charts.append(SVGBarChart(
            title: "body evaluations", unit: "count: bodies, delivered, matching (handled)",
            categories: names, series: ["body evaluations", "delivered", "handled"],
            values: perStyle { [Double($0.bodyEvaluations), Double($0.delivered), Double($0.handled)] }))
        charts.append(SVGBarChart(
            title: "Losses by cause", unit: "notifications", categories: names, series: ["losses"],
            segments: ["upstream gap", "local buffer", "hidden", "at end"],
            values: styles.map { [[Double($0.lostUpstream), Double($0.droppedLocalBuffer), Double($0.missedWhileHidden), Double($0.discardedAtEnd)]] }))
        charts.append(SVGBarChart(
            title: "Replayed on reappear", unit: "notifications", categories: [""], series: names, values: one { Double($0.replayed) }))
        charts.append(SVGBarChart(
            title: "Subscriber CPU", unit: "seconds (user + system, host window)", categories: [""], series: names,
            values: one { Double($0.cpuNanoseconds) / 1e9 }, format: { String(format: "%.3g", $0) }))
        charts.append(SVGBarChart(
            title: "Subscriber peak RSS", unit: "MB", categories: [""], series: names + (raw == nil ? [] : [rawName]),
            values: [styles.map { [Double($0.peakResidentKiB) * 1_024 / 1e6] } + (raw.map { [[Double($0.peakResidentKiB) * 1_024 / 1e6]] } ?? [])],
            format: { String(format: "%.3g", $0) }))
        let title = "nbus bench views"
        var body = header(title: title, subtitle: report.scenario.summary, date: report.date)
        body += publisherParagraph(report)
        body += chartGrid(charts)
        body += tableSection(report)
        body += baselineSection(report)
        body += identitySection(report)
        body += targetSection(report.targets, heading: "Targets")
        body += failureSection(report.failures)
        return document(title: title, body: body)
    }

    /// The page for a sweep: a chart per figure against the swept parameter, bars per style.
    public static func page(for sweep: ViewsSweepReport) -> String {
        let styles = sweep.styles
        let names = styles.map(\.title)
        let labels = sweep.labels
        func grid(_ value: (ViewsStyleSummary) -> Double) -> [[[Double]]] {
            sweep.runs.map { run in styles.map { style in run.summary(style).map { [value($0)] } ?? [0] } }
        }
        let axis = sweep.parameter.title
        var charts: [SVGBarChart] = []
        charts.append(SVGBarChart(
            title: "Throughput vs \(axis)", unit: "delivered per second of publishing", categories: labels, series: names,
            values: grid(\.deliveredPerSecond)))
        charts.append(SVGBarChart(
            title: "Latency p50 vs \(axis)", unit: "microseconds, publish to state update", categories: labels,
            series: names, values: grid { Double($0.latency.p50) / 1e3 }, logScale: true))
        charts.append(SVGBarChart(
            title: "Latency p99 vs \(axis)", unit: "microseconds, publish to state update", categories: labels,
            series: names, values: grid { Double($0.latency.p99) / 1e3 }, logScale: true))
        charts.append(SVGBarChart(
            title: "Main-actor busy vs \(axis)", unit: "% of the host's window (runtime accounting)", categories: labels,
            series: names, values: grid(\.mainActorBusyPercent), format: { String(format: "%.3g", $0) }))
        charts.append(SVGBarChart(
            title: "Main-actor responsiveness p99 vs \(axis)", unit: "microseconds a main-actor job waited",
            categories: labels, series: names, values: grid { Double($0.mainActorPing.p99) / 1e3 }, logScale: true))
        charts.append(SVGBarChart(
            title: "body evaluations vs \(axis)", unit: "count", categories: labels, series: names,
            values: grid { Double($0.bodyEvaluations) }))
        charts.append(SVGBarChart(
            title: "Losses by cause vs \(axis)", unit: "notifications (bars: onRcv, main, off, replay)",
            categories: labels, series: names, segments: ["upstream gap", "local buffer", "hidden", "at end"],
            values: sweep.runs.map { run in
                styles.map { style in
                    guard let s = run.summary(style) else { return [0, 0, 0, 0] }
                    return [Double(s.lostUpstream), Double(s.droppedLocalBuffer), Double(s.missedWhileHidden), Double(s.discardedAtEnd)]
                }
            }))
        charts.append(SVGBarChart(
            title: "Subscriber CPU vs \(axis)", unit: "seconds (user + system)", categories: labels, series: names,
            values: grid { Double($0.cpuNanoseconds) / 1e9 }, format: { String(format: "%.3g", $0) }))
        charts.append(SVGBarChart(
            title: "Subscriber peak RSS vs \(axis)", unit: "MB", categories: labels, series: names,
            values: grid { Double($0.peakResidentKiB) * 1_024 / 1e6 }, format: { String(format: "%.3g", $0) }))
        let title = "nbus bench sweep \(sweep.parameter.rawValue)"
        var body = header(
            title: title, subtitle: "values \(labels.joined(separator: ", ")); first run: \(sweep.runs.first?.scenario.summary ?? "")",
            date: sweep.runs.first?.date ?? Date())
        body += chartGrid(charts)
        for (label, run) in zip(labels, sweep.runs) {
            body += "<h2>\(SVGBarChart.escape(sweep.parameter.rawValue)) = \(SVGBarChart.escape(label))</h2>\n"
            body += publisherParagraph(run)
            body += tableSection(run)
            body += baselineSection(run)
            body += identitySection(run)
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
        .charts { display: flex; flex-wrap: wrap; gap: 12px; }
        .charts svg { border: 1px solid #ddd; background: #fff; }
        table { border-collapse: collapse; font-size: 13px; background: #fff; }
        th, td { border: 1px solid #ddd; padding: 3px 8px; }
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

    private static func chartGrid(_ charts: [SVGBarChart]) -> String {
        "<div class=\"charts\">\n" + charts.map { $0.svg() + "\n" }.joined() + "</div>\n"
    }

    private static func tableSection(_ report: ViewsReport) -> String {
        var html = "<table>\n<tr><th></th>"
        for style in report.styles { html += "<th>\(SVGBarChart.escape(style.style.title))</th>" }
        html += "</tr>\n"
        for (label, cells) in report.tableRows() {
            html += "<tr><th style=\"text-align:left\">\(SVGBarChart.escape(label))</th>"
            for cell in cells { html += "<td class=\"n\">\(SVGBarChart.escape(cell))</td>" }
            html += "</tr>\n"
        }
        return html + "</table>\n"
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
                + "\(SVGBarChart.escape(target.requirement))<br><small>\(SVGBarChart.escape(target.measured))</small></li>\n"
        }
        return html + "</ul>\n"
    }

    private static func failureSection(_ failures: [String]) -> String {
        guard !failures.isEmpty else { return "" }
        return "<h2 class=\"notmet\">Accounting failures</h2>\n<pre>"
            + SVGBarChart.escape(failures.joined(separator: "\n")) + "</pre>\n"
    }
}
