import Foundation
import Synchronization
import Testing

@testable import BusBench

/// `nbus demo`'s retained-views step (issue 39, item 7): a view that appears after the last post
/// of a retained name shows the current value at once with `start: .retained`; the default one
/// waits for the next change. The page and the table say so with the figures.
@Suite("nbus demo: retained views", .serialized, .timeLimit(.minutes(2)))
struct RetainedViewsDemoTests {
    @Test(
        "real processes: the retained view's first value is the current one, before the next post; the default view's is the change",
        .enabled(if: builtExecutables != nil, "needs nbus built"), .timeLimit(.minutes(1)))
    func realProcesses() async throws {
        let executables = try #require(builtExecutables)
        let steps = Steps()
        let result = try await ViewsBenchmark.withChildren(prefix: "nbus-retained-test") { group, folder in
            try await RetainedViewsDemo.run(
                nbusExecutable: executables.nbus, workerCommand: BenchWorkerCommand.nbusSubcommand, group: group,
                folder: folder, progress: steps.add)
        }
        #expect(result.holds, "\(result.lines)")
        // The views appeared after the retained post, in another process.
        #expect(result.appearedWallNanoseconds > result.postedWallNanoseconds)
        #expect(result.retainedView.value == "1.10" && result.retainedView.isRetained)
        #expect(result.retainedView.wallNanoseconds < result.changeWallNanoseconds, "first value before the next post")
        #expect(result.defaultView.value == "1.12" && !result.defaultView.isRetained)
        #expect(result.defaultView.wallNanoseconds >= result.changeWallNanoseconds)
        #expect(result.retainedFirstNanoseconds < result.defaultFirstNanoseconds)
        #expect(steps.all.contains { $0.contains("start: .retained  first value 1.10 (retained)") }, "\(steps.all)")
    }

    @Test("the page and the table show the step's figures; one that does not hold is an accounting failure")
    func reportSaysIt() throws {
        var report = ViewsReport(
            scenario: ViewsScenario(), date: Date(), wallNanoseconds: 1, results: ViewStyle.allCases.map { synthetic($0) })
        #expect(report.retainedViews == nil)
        #expect(!ViewsHTMLReport.page(for: report).contains("A view that appears after the last post"))
        let ms: UInt64 = 1_000_000
        let base = sampleRetainedViewsBase
        let result = sampleRetainedViews()
        #expect(result.holds)
        report.add(retainedViews: result)
        #expect(report.failures.isEmpty)
        let page = ViewsHTMLReport.page(for: report, title: "nbus demo")
        #expect(page.contains("A view that appears after the last post (retained values)"))
        #expect(page.contains("<td>1.10 (retained: the current value)</td><td>3.0 ms</td><td>yes: at once</td>"), "\(page)")
        #expect(page.contains("<td>1.12 (a change)</td><td>411.0 ms</td><td>no: it waited for the change</td>"))
        let table = report.table(command: "nbus demo")
        #expect(table.contains("start: .retained  first value 1.10 (retained) 3.0 ms after it appeared, before the next post"), "\(table)")
        #expect(table.contains("start: .now       first value 1.12 411.0 ms after it appeared: it waited for the next change (shown 1.0 ms after that post)"))
        // Through JSON and back (`--format json`), the step is there.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let step = try #require(object["retainedViews"])
        let decoded = try JSONDecoder().decode(RetainedViewsResult.self, from: JSONSerialization.data(withJSONObject: step))
        #expect(decoded == result)

        var late = result
        late.retainedView.wallNanoseconds = base + 470 * ms
        #expect(!late.holds)
        var failing = ViewsReport(
            scenario: ViewsScenario(), date: Date(), wallNanoseconds: 1, results: ViewStyle.allCases.map { synthetic($0) })
        failing.add(retainedViews: late)
        #expect(failing.failures.contains { $0.hasPrefix("retained views:") && $0.contains("NOT before the next post") })
    }
}

private final class Steps: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

let sampleRetainedViewsBase: UInt64 = 1_000_000_000_000

/// A retained-views step as a quiet machine measures it: the current value 3 ms after the views
/// appear, the change 400 ms after they are ready.
func sampleRetainedViews() -> RetainedViewsResult {
    let ms: UInt64 = 1_000_000
    let base = sampleRetainedViewsBase
    return RetainedViewsResult(
        name: "bench.views.price.eur", currentValue: "1.10", changedValue: "1.12", changeDelayNanoseconds: 400 * ms,
        postedWallNanoseconds: base, appearedWallNanoseconds: base + 50 * ms, changeWallNanoseconds: base + 460 * ms,
        retainedView: .init(value: "1.10", isRetained: true, wallNanoseconds: base + 53 * ms),
        defaultView: .init(value: "1.12", isRetained: false, wallNanoseconds: base + 461 * ms))
}
