import Foundation

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
