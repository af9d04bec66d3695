import Foundation

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
                    out += ##"stroke-width="2.5"\##(entry.strokeDash.map { #" stroke-dasharray="\#($0)""# } ?? "")/>"##
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
