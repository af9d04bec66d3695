import Foundation
import NotificationBus
import Synchronization
import Testing

@testable import BusBench

#if canImport(FoundationXML)
import FoundationXML
#endif

@Suite("Views scenario")
struct ViewsScenarioTests {
    @Test("Names are zero-padded so that none is a prefix of another; view i takes name i % names")
    func names() {
        var scenario = ViewsScenario()
        scenario.names = 12
        scenario.views = 30
        #expect(scenario.notificationName(1) == "bench.views.n001")
        #expect(scenario.notificationName(11) == "bench.views.n011")
        let all = (0..<scenario.names).map(scenario.notificationName)
        for a in all { for b in all where a != b { #expect(!b.hasPrefix(a)) } }
        #expect(scenario.nameIndex(ofView: 25) == 1)
        #expect(scenario.subscribedNameIndexes == Array(0..<12))
        scenario.names = 2_000
        #expect(scenario.notificationName(7) == "bench.views.n0007")
    }

    @Test("The match rule passes exactly the selectivity of each name's notifications", arguments: [0.0, 0.01, 0.1, 0.25, 1.0 / 3, 0.5, 1.0])
    func selectivity(_ fraction: Double) {
        var scenario = ViewsScenario()
        scenario.selectivity = fraction
        let matching = (0..<30_000).filter(scenario.matches(perNameIndex:)).count
        #expect(abs(Double(matching) - fraction * 30_000) <= 1)
    }

    @Test("Pages split the views for tabs and list; a stack has one page and no churn")
    func pages() {
        var scenario = ViewsScenario()
        scenario.views = 10
        scenario.tabs = 3
        #expect(scenario.pageCount == 3 && scenario.viewsPerPage == 4)
        #expect(scenario.views(onPage: 2) == 8..<10)
        #expect(scenario.page(ofView: 9) == 2)
        #expect(scenario.hasChurn)
        scenario.container = .none
        #expect(scenario.pageCount == 1 && scenario.views(onPage: 0) == 0..<10 && !scenario.hasChurn)
        scenario.container = .list
        scenario.churnMilliseconds = 0
        #expect(!scenario.hasChurn)
    }

    @Test("Invalid options are refused with a message; the scenario round-trips as a worker argument")
    func validation() throws {
        var scenario = ViewsScenario()
        try scenario.validate()
        #expect(try ViewsScenario.decode(argument: scenario.encodedArgument()) == scenario)
        scenario.size = 0
        #expect(throws: BenchError.self) { try scenario.validate() }
        scenario = ViewsScenario()
        scenario.styles = [.onReceive, .onReceive]
        #expect(throws: BenchError.self) { try scenario.validate() }
        scenario = ViewsScenario()
        scenario.selectivity = 1.5
        #expect(throws: BenchError.self) { try scenario.validate() }
    }

    @Test("Sweep values parse: 10%, 0.1, 20k, max, churn in ms")
    func sweepValues() throws {
        let base = ViewsScenario()
        #expect(try SweepParameter.selectivity.apply("10%", to: base).selectivity == 0.1)
        #expect(try SweepParameter.selectivity.apply("0.5", to: base).selectivity == 0.5)
        #expect(try SweepParameter.rate.apply("20k", to: base).rate == 20_000)
        #expect(try SweepParameter.rate.apply("max", to: base).rate == nil)
        #expect(try SweepParameter.views.apply("90", to: base).views == 90)
        #expect(try SweepParameter.churn.apply("0", to: base).churnMilliseconds == 0)
        #expect(throws: BenchError.self) { try SweepParameter.rate.apply("fast", to: base) }
        #expect(throws: BenchError.self) { try SweepParameter.views.apply("0", to: base) }
        #expect(SweepParameter.rate.label(in: try SweepParameter.rate.apply("max", to: base)) == "max")
    }
}

/// Synthetic results: 2 views on 2 names, 100 posted per name, consistent unless disturbed.
private func synthetic(
    _ style: ViewStyle, hidden: UInt64 = 0, unaccounted: UInt64 = 0, bodies: UInt64? = nil
) -> (ScenarioPublisherResult, ScenarioHostResult) {
    let publisher = ScenarioPublisherResult(
        postedPerName: [100, 100], matchingPerName: [10, 10], firstPostWallNanoseconds: 1_000_000_000,
        lastPostWallNanoseconds: 2_000_000_000, postNanoseconds: 1_000_000_000, closeNanoseconds: 1_000_000,
        requestedRate: 200, bus: BusCounters(BusStats()), endOfStreamUnacknowledged: 0, stoppedBy: "count")
    var views: [ScenarioViewCounters] = []
    for index in 0..<2 {
        var view = ScenarioViewCounters(view: index, name: index, page: index)
        view.received = 100
        view.missedWhileHidden = style.isPlainTask ? hidden : 0
        view.inBandHidden = view.missedWhileHidden
        view.delivered = 100 - view.missedWhileHidden - unaccounted
        view.matched = style == .onReceive ? 10 : 10 - view.missedWhileHidden / 10
        view.lastSequence = 100
        view.skippedSequences = view.missedWhileHidden + unaccounted
        view.stateUpdates = view.matched
        view.bodyEvaluations = bodies ?? (style == .onReceive ? view.delivered : view.matched)
        view.mainActorBusyNanoseconds = style == .onReceive ? 80_000_000 : 5_000_000
        view.hiddenNanoseconds = style.isTask ? 500_000_000 : 0
        views.append(view)
    }
    let host = ScenarioHostResult(
        style: style, views: views, latency: LatencySummary(count: 1, p50: 1_000, p99: 2_000, max: 3_000, mean: 1_000),
        windowNanoseconds: 1_000_000_000, mainActorPing: LatencySummary(count: 1, p50: 10, p99: 20, max: 30, mean: 10),
        windowUserNanoseconds: 1, windowSystemNanoseconds: 1, totalUserNanoseconds: 1, totalSystemNanoseconds: 1,
        peakResidentKiB: 40_000, churnTransitions: 4, drainIncomplete: false, drainNanoseconds: 1, subscriptionErrors: [],
        endOfStreamRecords: 1)
    return (publisher, host)
}

@Suite("Views report")
struct ViewsReportTests {
    private var churning: ViewsScenario {
        var scenario = ViewsScenario()
        scenario.views = 2
        scenario.names = 2
        scenario.tabs = 2
        return scenario
    }

    @Test("Consistent results: the identity holds, the targets are met, the outputs agree")
    func consistent() throws {
        let results = [synthetic(.onReceive), synthetic(.taskMain, hidden: 50), synthetic(.taskOffMain, hidden: 50), synthetic(.taskReplay)]
        let report = ViewsReport(scenario: churning, date: Date(), wallNanoseconds: 1, results: results)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.styles.allSatisfy { $0.identityHolds })
        let off = try #require(report.summary(.taskOffMain))
        #expect(off.published == 200 && off.missedWhileHidden == 100 && off.unseenBySequence == 100 && off.accounted == 200)
        #expect(off.expectedHiddenByTime == 100)
        #expect(report.targets.count == 5)
        #expect(report.targets.allSatisfy { $0.met == true }, "\(report.targets.map(\.measured))")
        let table = report.table()
        #expect(table.contains("HOLDS") && !table.contains("FAILS") && table.contains("[met]"))
        let csv = report.csv().split(separator: "\n")
        #expect(csv.count == 5)
        let columns = ViewsReport.csvHeader.split(separator: ",").count
        #expect(csv.allSatisfy { $0.split(separator: ",", omittingEmptySubsequences: false).count == columns })
        let decoded = try JSONDecoder.iso8601().decode(ViewsReport.self, from: Data(try report.json().utf8))
        #expect(decoded.styles.map(\.style) == ViewStyle.allCases)
    }

    @Test("A notification nobody accounts for breaks the identity, loudly")
    func brokenIdentity() {
        let report = ViewsReport(
            scenario: churning, date: Date(), wallNanoseconds: 1, results: [synthetic(.taskMain, hidden: 50, unaccounted: 3)])
        #expect(!report.failures.isEmpty)
        #expect(report.failures[0].contains("published 100 != delivered 47"))
        #expect(report.table().contains("FAILS"))
    }

    @Test("Targets: a render per message for task styles, or hidden losses not seen in-band, are not met")
    func unmetTargets() {
        var hiddenSilently = synthetic(.taskOffMain, hidden: 50)
        hiddenSilently.1.views[0].inBandHidden = 0
        let report = ViewsReport(
            scenario: churning, date: Date(), wallNanoseconds: 1,
            results: [synthetic(.onReceive), synthetic(.taskMain, hidden: 50, bodies: 50), hiddenSilently])
        let verdicts = report.targets.map(\.met)
        #expect(verdicts[0] == true)  // busy 10 ms vs 160 ms
        #expect(verdicts[2] == false)  // task bodies != matching
        #expect(verdicts[3] == false)  // in-band gaps missing
        #expect(verdicts[4] == nil)  // no replay style
    }
}

extension JSONDecoder {
    static func iso8601() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

@Suite("Views HTML report")
struct ViewsHTMLTests {
    @Test("The page is self-contained and every chart is well-formed SVG, for a run and for a sweep")
    func page() throws {
        var scenario = ViewsScenario()
        scenario.views = 2
        scenario.names = 2
        let results = [synthetic(.onReceive), synthetic(.taskMain, hidden: 50), synthetic(.taskOffMain, hidden: 50), synthetic(.taskReplay)]
        let report = ViewsReport(scenario: scenario, date: Date(), wallNanoseconds: 1, results: results)
        var other = report
        other.scenario.selectivity = 0.5
        let sweep = ViewsSweepReport(parameter: .selectivity, values: ["0.1", "0.5"], runs: [report, other])
        for html in [ViewsHTMLReport.page(for: report), ViewsHTMLReport.page(for: sweep)] {
            #expect(html.hasPrefix("<!DOCTYPE html>"))
            #expect(!html.contains("<script") && !html.contains("src=") && !html.contains("href="))
            let withoutNamespace = html.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
            #expect(!withoutNamespace.contains("http"))
            let svgs = html.components(separatedBy: "<svg ").dropFirst().map { "<svg " + $0.components(separatedBy: "</svg>")[0] + "</svg>" }
            #expect(svgs.count >= 8)
            for svg in svgs {
                #expect(svg.contains("<rect"))
                #if canImport(FoundationXML)
                let parser = XMLParser(data: Data(svg.utf8))
                #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
                #endif
            }
        }
        #expect(ViewsHTMLReport.page(for: sweep).contains("vs selectivity"))
    }

    @Test("Chart text is escaped")
    func escaping() {
        #expect(SVGBarChart.escape("a<b & \"c\"") == "a&lt;b &amp; &quot;c&quot;")
        #expect(SVGBarChart.niceStep(0.7) == 1 && SVGBarChart.niceStep(1_234) == 2_000 && SVGBarChart.niceStep(0) == 1)
    }
}

/// Counts `ready` calls; `wait()` returns once there were `expected`.
private final class Countdown: Sendable {
    private let state: Mutex<(left: Int, waiters: [CheckedContinuation<Void, Never>])>

    init(_ expected: Int) { state = Mutex((expected, [])) }

    func arrive() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.left -= 1
            guard state.left <= 0 else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.left <= 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}

@Suite("Views scenario in one process", .serialized)
struct ViewsInProcessTests {
    /// The publisher and one host per style in this process, over ipc: the real workers' code
    /// without the child processes.
    private func run(_ scenario: ViewsScenario) async throws -> ViewsReport {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nbus-views-test-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let endpoint = "ipc://\(folder.path)/views.sock"
        let ready = Countdown(scenario.styles.count)
        let publisher = Task {
            try await ScenarioPublisher.run(
                scenario, endpoint: endpoint, hosts: scenario.styles.count, bound: { _ in }, subscribed: { await ready.wait() })
        }
        let published = Task { try await publisher.value }
        let hosts = scenario.styles.map { style in
            Task { @MainActor in
                try await ScenarioHost.run(
                    scenario, style: style, endpoint: endpoint, ready: { ready.arrive() },
                    published: { (try? await published.value) ?? ScenarioPublisherResult.empty })
            }
        }
        var results: [(ScenarioPublisherResult, ScenarioHostResult)] = []
        let done = try await publisher.value
        for host in hosts { results.append((done, try await host.value)) }
        return ViewsReport(scenario: scenario, date: Date(), wallNanoseconds: 1, results: results)
    }

    @Test("Tabs with churn: every style's identity holds; task styles render per match; replay loses nothing",
          .timeLimit(.minutes(2)))
    func tabsWithChurn() async throws {
        var scenario = ViewsScenario()
        scenario.rate = 3_000
        scenario.seconds = 1.5
        scenario.views = 6
        scenario.names = 6
        scenario.tabs = 3
        scenario.churnMilliseconds = 100
        scenario.bodyMicroseconds = 5
        scenario.selectivity = 0.2
        let report = try await run(scenario)
        #expect(report.failures.isEmpty, "\(report.failures)")
        for style in report.styles {
            #expect(style.published == report.publisher.posted, "\(style.style)")
            #expect(style.identityHolds, "\(style.style): \(style.identityFailures)")
        }
        let receive = try #require(report.summary(.onReceive))
        #expect(receive.bodyEvaluations == receive.delivered && receive.delivered == receive.published)
        for style in report.styles where style.style.isTask {
            #expect(style.bodyEvaluations == style.handled, "\(style.style)")
        }
        for style in report.styles where style.style.isPlainTask {
            #expect(style.missedWhileHidden > 0 && style.inBandHidden == style.missedWhileHidden, "\(style.style)")
            #expect(style.unseenBySequence == style.missedWhileHidden + style.lostUpstream, "\(style.style)")
        }
        let replay = try #require(report.summary(.taskReplay))
        #expect(replay.missedWhileHidden == 0 && replay.replayed > 0 && replay.delivered == replay.published)
    }

    @Test("A lazy list: rows scrolled out keep their subscription; the identity holds", .timeLimit(.minutes(2)))
    func lazyList() async throws {
        var scenario = ViewsScenario()
        scenario.rate = 2_000
        scenario.seconds = 1
        scenario.views = 8
        scenario.names = 4
        scenario.tabs = 4
        scenario.container = .list
        scenario.churnMilliseconds = 80
        scenario.bodyMicroseconds = 0
        scenario.styles = [.onReceive, .taskOffMain, .taskReplay]
        let report = try await run(scenario)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.styles.allSatisfy { $0.published == 2 * report.publisher.posted })
        #expect(report.summary(.taskOffMain).map { $0.missedWhileHidden > 0 } == true)
        #expect(report.summary(.taskReplay).map { $0.missedWhileHidden == 0 } == true)
    }
}

extension ScenarioPublisherResult {
    static let empty = ScenarioPublisherResult(
        postedPerName: [], matchingPerName: [], firstPostWallNanoseconds: 0, lastPostWallNanoseconds: 0,
        postNanoseconds: 0, closeNanoseconds: 0, requestedRate: 0, bus: BusCounters(BusStats()),
        endOfStreamUnacknowledged: 0, stoppedBy: "none")
}
