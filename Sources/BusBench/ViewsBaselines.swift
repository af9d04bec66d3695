import Foundation

#if canImport(Glibc)
import Glibc
#endif

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
