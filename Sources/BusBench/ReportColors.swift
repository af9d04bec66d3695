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
