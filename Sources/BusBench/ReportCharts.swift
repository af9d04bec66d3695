import Foundation

/// A line chart over time drawn as inline SVG: one line per series (a style keeps its colour),
/// the drain (after the last post) shaded, and the visibility changes ticked along the time axis.
struct SVGLineChart {
    struct Series {
        var name: String
        var color: String
        var dashed = false
        /// The line's own dash pattern (SVG `stroke-dasharray`): styles whose lines may coincide
        /// (task on and off the main actor often deliver alike) stay told apart where they do.
        var dashPattern: String?
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
        var legendEntries = series.map { LegendEntry(name: $0.name, color: $0.color, dashed: $0.dashed, line: true, dashPattern: $0.dashPattern) }
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
                let dash = line.dashPattern ?? (line.dashed ? "5 3" : nil)
                out += ##"stroke-linejoin="round"\##(dash.map { #" stroke-dasharray="\#($0)""# } ?? "")/>"##
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
