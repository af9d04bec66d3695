import Foundation

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
