import Foundation

/// One style's figures as multiples of raw libzmq's, measured in the same invocation.
package struct ViewsRawRatio: Codable, Sendable, Equatable {
    /// The style the ratios are of.
    package var style: ViewStyle
    /// Host CPU per frame that reached it / raw subscriber CPU per frame.
    package var cpuPerFrame: Double?
    /// Style latency p50 / raw latency p50 (publish to state update against send to receipt).
    package var latencyP50: Double?
    /// Style latency p99 / raw latency p99.
    package var latencyP99: Double?
    /// Delivered per second / raw delivered per second.
    package var deliveredPerSecond: Double?
    /// Host peak RSS / raw subscriber peak RSS.
    package var peakResident: Double?

    init(style: ViewsStyleSummary, raw: RawBaselineRow) {
        func ratio(_ a: Double, _ b: Double) -> Double? { a > 0 && b > 0 ? a / b : nil }
        self.style = style.style
        cpuPerFrame = ratio(style.cpuPerFrameNanoseconds, raw.cpuPerFrameNanoseconds)
        latencyP50 = raw.latency.flatMap { ratio(Double(style.latency.p50), Double($0.p50)) }
        latencyP99 = raw.latency.flatMap { ratio(Double(style.latency.p99), Double($0.p99)) }
        deliveredPerSecond = ratio(style.deliveredPerSecond, raw.deliveredPerSecond)
        peakResident = ratio(Double(style.peakResidentKiB), Double(raw.peakResidentKiB))
    }

    /// `12.3x`, or `-` when either side is missing.
    static func text(_ value: Double?) -> String {
        guard let value else { return "-" }
        // Thousands separated, as every other figure of the report is.
        return value >= 100 ? Format.count(Int(value.rounded())) + "x" : value >= 10 ? String(format: "%.1fx", value) : String(format: "%.2fx", value)
    }
}
