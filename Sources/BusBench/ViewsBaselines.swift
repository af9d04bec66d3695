import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Raw libzmq PUB/SUB in two processes (`nbus-baseline`, C), run in the same invocation as a views
/// scenario with the scenario's transport, rate, payload size and high-water mark: what each
/// style's figures are read against.
package struct RawBaselineRow: Codable, Sendable, Equatable {
    /// How the row is labelled in every output.
    package static let label = "raw libzmq PUB/SUB (nbus-baseline, C)"
    /// The CSV/JSON key of the row.
    package static let key = "raw-libzmq"

    /// The scenario's transport (ipc or tcp).
    package var transport: ThroughputOptions.Transport
    /// Frames per second the publisher was paced to (nil: as fast as ZeroMQ takes them).
    package var requestedRate: Int?
    /// Payload bytes, and bytes per frame (name, NUL, NBP/1 header, payload).
    package var size: Int
    package var frameBytes: Int
    /// Frames sent, and received by the subscriber (equal: XPUB with NODROP loses none).
    package var published: Int
    package var delivered: Int
    /// Sequence gaps and frames of the wrong size the subscriber saw (both must be 0).
    package var gaps: UInt64
    package var badSize: Int
    /// First to last frame at the subscriber, ns, and frames per second over it.
    package var elapsedNanoseconds: UInt64
    package var deliveredPerSecond: Double
    /// Send stamp to receipt, ns (paced runs only: unpaced frames carry one stamp for all).
    package var latency: LatencySummary?
    /// The subscriber process's CPU time (getrusage, its whole life) and peak RSS (VmHWM).
    package var cpuNanoseconds: UInt64
    package var peakResidentKiB: UInt64

    /// Subscriber CPU per frame, ns.
    package var cpuPerFrameNanoseconds: Double { delivered == 0 ? 0 : Double(cpuNanoseconds) / Double(delivered) }
}

/// Foundation's `NotificationCenter` in this process, one block observer, the same payload, as
/// fast as `post` returns: the in-process row of a views run.
package struct FoundationBaselineRow: Codable, Sendable, Equatable {
    /// How the row is labelled in every output.
    package static let label = "Foundation NotificationCenter (in-process, block observer)"
    /// The CSV/JSON key of the row.
    package static let key = "foundation-notificationcenter"

    /// Payload bytes (a `[UInt8]` in `userInfo`).
    package var size: Int
    /// Posts made, and observer calls that read the payload back.
    package var posted: Int
    package var delivered: Int
    /// First post to last delivery, ns, and deliveries per second over it.
    package var elapsedNanoseconds: UInt64
    package var deliveredPerSecond: Double
    /// CPU time of the posting thread (the observer runs inside `post`), ns.
    package var cpuNanoseconds: UInt64

    /// CPU per notification (post plus the observer), ns.
    package var cpuPerNotificationNanoseconds: Double { delivered == 0 ? 0 : Double(cpuNanoseconds) / Double(delivered) }
}

/// The baseline rows of one views run (nil when skipped; `skipped` says why).
package struct ViewsBaselines: Codable, Sendable, Equatable {
    package var raw: RawBaselineRow?
    package var foundation: FoundationBaselineRow?
    /// Why a row is missing (`--baseline-seconds 0`, `nbus-baseline` not built...).
    package var skipped: [String]

    /// The rows measured, and why any is missing.
    package init(raw: RawBaselineRow? = nil, foundation: FoundationBaselineRow? = nil, skipped: [String] = []) {
        self.raw = raw
        self.foundation = foundation
        self.skipped = skipped
    }

    /// No rows, with the reason.
    package static func none(_ reason: String) -> ViewsBaselines { ViewsBaselines(skipped: [reason]) }

    /// How many notifications the baselines send for `scenario` in `seconds`: the scenario's rate
    /// for that long (and no more than its count); unpaced, up to 1,000,000 (about a second of raw
    /// libzmq on a small machine).
    package static func count(for scenario: ViewsScenario, seconds: Double) -> Int {
        let bound = scenario.rate.map { max(2, Int(Double($0) * seconds)) } ?? 1_000_000
        return max(2, min(scenario.count, bound))
    }

    /// Runs both baselines: raw libzmq as two child processes in `group`, then Foundation here.
    static func run(
        scenario: ViewsScenario, seconds: Double, baselineExecutable: String, group: ChildGroup, folder: String,
        progress: @Sendable (String) -> Void
    ) async throws -> ViewsBaselines {
        guard seconds > 0 else { return .none("baselines off (--baseline-seconds 0)") }
        let count = count(for: scenario, seconds: seconds)
        var baselines = ViewsBaselines()
        if FileManager.default.isExecutableFile(atPath: baselineExecutable) {
            let rateText = scenario.rate.map { "\(Format.count($0))/s" } ?? "as fast as it can"
            progress("baseline: raw libzmq PUB/SUB, \(Format.count(count)) x \(scenario.size) B at \(rateText)")
            let raw = RawBaseline(
                group: group, executable: baselineExecutable, folder: folder, transport: scenario.transport,
                timeoutSeconds: Int((seconds * 4).rounded(.up)) + scenario.startupSeconds + 30)
            let stream = RawBaseline.Stream(
                count: count, size: scenario.size, highWaterMark: scenario.highWaterMark,
                name: scenario.notificationName(0), rate: scenario.rate, latency: scenario.rate != nil)
            let result = try await raw.publishSubscribe(tag: "raw-baseline", stream)
            baselines.raw = RawBaselineRow(
                transport: scenario.transport, requestedRate: scenario.rate, size: scenario.size,
                frameBytes: result.frameBytes, published: count, delivered: result.count, gaps: result.gaps,
                badSize: result.badSize, elapsedNanoseconds: result.elapsedNanoseconds, deliveredPerSecond: result.rate,
                latency: result.latency,
                cpuNanoseconds: (result.cpuUserNanoseconds ?? 0) + (result.cpuSystemNanoseconds ?? 0),
                peakResidentKiB: result.maxResidentKiB ?? 0)
        } else {
            baselines.skipped.append(
                "raw libzmq: \(baselineExecutable) not found (build it: swift build --product nbus-baseline)")
        }
        try Task.checkCancellation()
        progress("baseline: Foundation NotificationCenter, \(Format.count(count)) posts of \(scenario.size) B in this process")
        baselines.foundation = foundation(count: count, size: scenario.size)
        return baselines
    }

    /// `FoundationCenterBenchmark.blockObserver`, with the posting thread's CPU time around it.
    static func foundation(count: Int, size: Int) -> FoundationBaselineRow {
        let before = threadCPUNanoseconds()
        let sample = FoundationCenterBenchmark.blockObserver(count: count, size: size)
        let cpu = threadCPUNanoseconds() &- before
        return FoundationBaselineRow(
            size: size, posted: sample.posted, delivered: sample.delivered, elapsedNanoseconds: sample.elapsedNanoseconds,
            deliveredPerSecond: sample.rate, cpuNanoseconds: cpu)
    }

    /// This thread's CPU time, ns (`CLOCK_THREAD_CPUTIME_ID`).
    static func threadCPUNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

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
