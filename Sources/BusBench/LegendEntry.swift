import Foundation

/// One legend entry: a swatch (a square, or a line, dashed or not) and its text.
struct LegendEntry {
    var name: String
    var color: String
    var dashed = false
    var line = false
}
