import Foundation

/// One legend entry: a swatch (a square, or a line, dashed or not) and its text.
struct LegendEntry {
    var name: String
    var color: String
    var dashed = false
    var line = false
    /// The line's own dash pattern (SVG `stroke-dasharray`), when it has one.
    var dashPattern: String?

    /// What the swatch's `stroke-dasharray` is: its own pattern, "5 3" when dashed, or none.
    var strokeDash: String? { dashPattern ?? (dashed ? "5 3" : nil) }
}
