import Foundation

/// The colours of the reports: one per style, the same in every chart, and greys for the baselines.
enum ReportColors {
    static func color(of style: ViewStyle) -> String {
        switch style {
        case .onReceive: return "#d6604d"
        case .taskMain: return "#4393c3"
        case .taskOffMain: return "#1b7837"
        case .taskReplay: return "#8073ac"
        }
    }

    static let rawBaseline = "#8c8c8c"
    static let foundationBaseline = "#4d4d4d"
    static let published = "#222222"
}

/// Text measurement for laying out SVG labels without a browser: a generous per-character width
/// (Helvetica/Arial average about 0.55 em; 0.62 em leaves room for wide glyphs).
enum TextWidth {
    static func of(_ text: String, size: Double) -> Double { Double(text.count) * size * 0.62 }

    /// `text` split into lines of at most `width` at `size` (words kept whole; a word longer than
    /// a line is shrunk into it by the caller's `fitting` size).
    static func wrap(_ text: String, width: Double, size: Double) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ").map(String.init) {
            let candidate = current.isEmpty ? word : current + " " + word
            if of(candidate, size: size) <= width || current.isEmpty {
                current = candidate
            } else {
                lines.append(current)
                current = word
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }

    /// The largest size up to `size` at which every line of `lines` fits `width`.
    static func fitting(_ lines: [String], width: Double, size: Double) -> Double {
        let widest = lines.map { of($0, size: 1) }.max() ?? 0
        return widest > 0 ? min(size, width / widest) : size
    }
}

/// One legend entry: a swatch (a square, or a line, dashed or not) and its text.
struct LegendEntry {
    var name: String
    var color: String
    var dashed = false
    var line = false
}

/// Pieces shared by the bar and line charts: the frame, title, legend.
enum SVGFrame {
    static let width = 640.0
    static let height = 320.0

    static func open(title: String, unit: String) -> String {
        var out = ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \##(Int(width)) \##(Int(height))" "##
        out += ##"preserveAspectRatio="xMidYMid meet" role="img" aria-label="\##(escape(title))" class="chart" "##
        out += ##"font-family="Helvetica, Arial, sans-serif">"##
        out += ##"<rect x="0" y="0" width="\##(Int(width))" height="\##(Int(height))" fill="#ffffff"/>"##
        let titleSize = TextWidth.fitting([title], width: width - 24, size: 15)
        out += ##"<text x="12" y="20" font-size="\##(n(titleSize))" font-weight="bold" fill="#222">\##(escape(title))</text>"##
        let unitSize = TextWidth.fitting([unit], width: width - 24, size: 11)
        out += ##"<text x="12" y="37" font-size="\##(n(unitSize))" fill="#555">\##(escape(unit))</text>"##
        return out
    }

    /// Legend rows at the bottom; returns the SVG and the height it takes.
    static func legend(_ entries: [LegendEntry], left: Double) -> (String, Double) {
        guard !entries.isEmpty else { return ("", 0) }
        let size = 11.0
        var rows: [[(LegendEntry, Double)]] = [[]]
        var rowWidth = 0.0
        for entry in entries {
            let entryWidth = 30 + TextWidth.of(entry.name, size: size)
            if rowWidth + entryWidth > width - left - 8, !(rows.last?.isEmpty ?? true) {
                rows.append([])
                rowWidth = 0
            }
            rows[rows.count - 1].append((entry, rowWidth))
            rowWidth += entryWidth
        }
        var out = ""
        for (index, row) in rows.enumerated() {
            let y = height - 10 - 16 * Double(rows.count - 1 - index)
            for (entry, offset) in row {
                let x = left + offset
                if entry.line {
                    out += ##"<line x1="\##(n(x))" y1="\##(n(y - 4))" x2="\##(n(x + 18))" y2="\##(n(y - 4))" stroke="\##(entry.color)" "##
                    out += ##"stroke-width="2.5"\##(entry.dashed ? #" stroke-dasharray="5 3""# : "")/>"##
                } else {
                    out += ##"<rect x="\##(n(x + 4))" y="\##(n(y - 9))" width="10" height="10" fill="\##(entry.color)"/>"##
                }
                out += ##"<text x="\##(n(x + 22))" y="\##(n(y))" font-size="\##(n(size))" fill="#333">\##(escape(entry.name))</text>"##
            }
        }
        return (out, 16 * Double(rows.count) + 6)
    }

    static func n(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String { SVGBarChart.escape(text) }
}

/// A line chart over time drawn as inline SVG: one line per series (a style keeps its colour),
/// the drain (after the last post) shaded, and the visibility changes ticked along the time axis.
struct SVGLineChart {
    struct Series {
        var name: String
        var color: String
        var dashed = false
        /// (seconds, value); nil values break the line (no sample in that interval).
        var points: [(Double, Double?)]
    }

    var title: String
    var unit: String
    var series: [Series]
    /// Where posting stopped (the drain is shaded from there), seconds.
    var postingEnd: Double?
    /// Visibility changes, seconds.
    var marks: [Double] = []
    var logScale = false
    var format: (Double) -> String = { SVGBarChart.compact($0) }

    private let left = 70.0
    private let right = 14.0
    private let top = 48.0

    func svg() -> String {
        var legendEntries = series.map { LegendEntry(name: $0.name, color: $0.color, dashed: $0.dashed, line: true) }
        if !marks.isEmpty { legendEntries.append(LegendEntry(name: "tab switch", color: "#bbbbbb")) }
        if postingEnd != nil { legendEntries.append(LegendEntry(name: "drain (after the last post)", color: "#eeeeee")) }
        let (legend, legendHeight) = SVGFrame.legend(legendEntries, left: left)
        let bottom = legendHeight + 30
        let width = SVGFrame.width
        let plotWidth = width - left - right
        let plotHeight = SVGFrame.height - top - bottom
        let values = series.flatMap { $0.points.compactMap(\.1) }
        let xMax = max(0.001, (series.flatMap { $0.points.map(\.0) } + [postingEnd ?? 0]).max() ?? 1)
        let x: (Double) -> Double = { left + plotWidth * min(max($0, 0), xMax) / xMax }
        let axis = ChartAxis(values: values, logScale: logScale)
        let y: (Double) -> Double = { top + plotHeight * (1 - axis.position($0)) }

        var out = SVGFrame.open(title: title, unit: unit + (logScale ? " (log scale)" : ""))
        if let end = postingEnd, end < xMax {
            out += ##"<rect x="\##(n(x(end)))" y="\##(n(top))" width="\##(n(x(xMax) - x(end)))" height="\##(n(plotHeight))" fill="#eeeeee"/>"##
        }
        for tick in axis.ticks {
            let ty = y(tick)
            out += ##"<line x1="\##(n(left))" y1="\##(n(ty))" x2="\##(n(width - right))" y2="\##(n(ty))" stroke="#e3e3e3"/>"##
            out += ##"<text x="\##(n(left - 6))" y="\##(n(ty + 4))" font-size="10" text-anchor="end" fill="#555">\##(escape(format(tick)))</text>"##
        }
        // Time axis: about 8 ticks in whole seconds.
        let step = SVGBarChart.niceStep(xMax / 8)
        for second in stride(from: 0.0, through: xMax + step / 100, by: step) {
            out += ##"<line x1="\##(n(x(second)))" y1="\##(n(top + plotHeight))" x2="\##(n(x(second)))" y2="\##(n(top + plotHeight + 4))" stroke="#888"/>"##
            out += ##"<text x="\##(n(x(second)))" y="\##(n(top + plotHeight + 16))" font-size="10" text-anchor="middle" fill="#555">\##(escape(String(format: "%g s", second)))</text>"##
        }
        out += ##"<line x1="\##(n(left))" y1="\##(n(top + plotHeight))" x2="\##(n(width - right))" y2="\##(n(top + plotHeight))" stroke="#888"/>"##
        for mark in marks where mark <= xMax {
            out += ##"<line x1="\##(n(x(mark)))" y1="\##(n(top + plotHeight - 6))" x2="\##(n(x(mark)))" y2="\##(n(top + plotHeight))" stroke="#bbbbbb"/>"##
        }
        for line in series {
            var segments: [[(Double, Double)]] = [[]]
            for (second, value) in line.points {
                if let value {
                    segments[segments.count - 1].append((second, value))
                } else if !(segments.last?.isEmpty ?? true) {
                    segments.append([])
                }
            }
            for segment in segments where !segment.isEmpty {
                let coordinates = segment.map { "\(n(x($0.0))),\(n(y($0.1)))" }.joined(separator: " ")
                out += ##"<polyline points="\##(coordinates)" fill="none" stroke="\##(line.color)" stroke-width="2" "##
                out += ##"stroke-linejoin="round"\##(line.dashed ? #" stroke-dasharray="5 3""# : "")/>"##
            }
            // Hover targets: each point says what it is, with its unit.
            for (second, value) in line.points {
                guard let value else { continue }
                out += ##"<circle cx="\##(n(x(second)))" cy="\##(n(y(value)))" r="3" fill="\##(line.color)" fill-opacity="0.01">"##
                out += ##"<title>\##(escape("\(line.name) at \(String(format: "%.2f s", second)): \(format(value))"))</title></circle>"##
            }
        }
        out += legend
        out += "</svg>"
        return out
    }

    private func n(_ value: Double) -> String { SVGFrame.n(value) }
    private func escape(_ text: String) -> String { SVGFrame.escape(text) }
}

/// A value axis: linear from 0 with nice steps, or log in decades.
struct ChartAxis {
    var ticks: [Double]
    var low: Double
    var high: Double
    var logScale: Bool

    init(values: [Double], logScale: Bool) {
        self.logScale = logScale
        let maximum = max(values.max() ?? 0, 0)
        if logScale {
            let positive = values.filter { $0 > 0 }
            low = floor(log10(max(positive.min() ?? 1, 1e-12)))
            high = max(low + 1, ceil(log10(max(maximum, 1e-12))))
            ticks = stride(from: low, through: high, by: 1).map { pow(10, $0) }
        } else {
            let step = SVGBarChart.niceStep(maximum / 5)
            low = 0
            high = step * ceil(max(maximum, step) / step)
            ticks = stride(from: 0, through: high + step / 2, by: step).map { $0 }
        }
    }

    /// 0 (bottom) ... 1 (top).
    func position(_ value: Double) -> Double {
        if logScale {
            let clamped = max(value, pow(10, low))
            return min(1, (log10(clamped) - low) / (high - low))
        }
        return min(max(value, 0), high) / max(high, 1e-12)
    }
}
