import Foundation
import NotificationBus

/// A parameter `nbus bench sweep` varies.
package enum SweepParameter: String, Codable, Sendable, CaseIterable {
    case selectivity, rate, views, churn

    /// The axis title.
    package var title: String {
        switch self {
        case .selectivity: return "selectivity"
        case .rate: return "rate (msg/s)"
        case .views: return "views"
        case .churn: return "churn (ms)"
        }
    }

    /// `scenario` with this parameter set to `value` (text as given on the command line).
    package func apply(_ value: String, to scenario: ViewsScenario) throws(BenchError) -> ViewsScenario {
        var changed = scenario
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        switch self {
        case .selectivity:
            var text = trimmed
            var scale = 1.0
            if text.hasSuffix("%") {
                text.removeLast()
                scale = 0.01
            }
            guard let fraction = Double(text) else { throw .invalidOptions("selectivity value '\(value)' is not a number") }
            changed.selectivity = fraction * scale
        case .rate:
            if trimmed.lowercased() == "max" {
                changed.rate = nil
            } else {
                guard let rate = Self.integer(trimmed) else { throw .invalidOptions("rate value '\(value)' is not a number or max") }
                changed.rate = rate
            }
        case .views:
            guard let views = Self.integer(trimmed) else { throw .invalidOptions("views value '\(value)' is not a number") }
            changed.views = views
        case .churn:
            // Seconds, like every time option of the CLI; the scenario keeps whole milliseconds,
            // so a value that would round to none is refused rather than quietly becoming none.
            guard let seconds = Double(trimmed), seconds.isFinite, (0...3_600).contains(seconds) else {
                throw .invalidOptions("churn value '\(value)' is not from 0 to 3600 seconds")
            }
            guard seconds == 0 || seconds >= 0.001 else {
                throw .invalidOptions("churn value '\(value)' is under a millisecond (0 means none)")
            }
            changed.churnMilliseconds = Int((seconds * 1_000).rounded())
        }
        try changed.validate()
        return changed
    }

    /// The parameter's value in `scenario`, as a number for charts (max rate: 0).
    package func value(in scenario: ViewsScenario) -> Double {
        switch self {
        case .selectivity: return scenario.selectivity
        case .rate: return Double(scenario.rate ?? 0)
        case .views: return Double(scenario.views)
        case .churn: return Double(scenario.churnMilliseconds)
        }
    }

    /// The parameter's value in `scenario`, as a label.
    package func label(in scenario: ViewsScenario) -> String {
        switch self {
        case .selectivity: return ViewsScenario.percent(scenario.selectivity)
        case .rate: return scenario.rate.map { Format.count($0) } ?? "max"
        case .views: return "\(scenario.views)"
        case .churn: return scenario.churnMilliseconds == 0 ? "none" : "\(scenario.churnMilliseconds) ms"
        }
    }

    /// `20k`, `20000`, `1.5k`, `2m`.
    static func integer(_ text: String) -> Int? {
        let lower = text.lowercased().replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")
        if let value = Int(lower) { return value }
        var multiplier = 1.0
        var digits = lower
        if lower.hasSuffix("k") {
            multiplier = 1_000
            digits.removeLast()
        } else if lower.hasSuffix("m") {
            multiplier = 1_000_000
            digits.removeLast()
        }
        // Int(exactly:) is nil for NaN, infinities and values beyond Int (`1e300`), where Int() traps.
        guard let value = Double(digits) else { return nil }
        return Int(exactly: (value * multiplier).rounded())
    }
}
