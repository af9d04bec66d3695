import Foundation
import Testing

@testable import BusBench

/// The demo report says what happened (what was posted, which command ran, how loaded the
/// machine was) and its bar values stay readable at the top of a scale (issue 27.13).
@Suite("Demo report: header, command, machine load, bar values")
struct DemoReportTests {
    @Test("the header counts what was posted, not the cap; the table names the command the page names")
    func headerAndCommand() throws {
        var scenario = ViewsScenario()
        scenario.views = 2
        scenario.names = 2
        scenario.tabs = 2
        scenario.count = 1_120_000
        scenario.seconds = 28
        let results = ViewStyle.allCases.map { synthetic($0) }
        let report = ViewsReport(scenario: scenario, date: Date(), wallNanoseconds: 1, results: results)
        let posted = report.publishers.reduce(UInt64(0)) { $0 + $1.posted }
        #expect(posted > 0)
        #expect(report.runSummary.contains("\(Format.count(Int(posted))) msgs posted (at most 1,120,000 in 28 s)"), "\(report.runSummary)")
        #expect(!report.runSummary.contains("up to"), "\(report.runSummary)")
        #expect(report.table(command: "nbus demo").hasPrefix("nbus demo: "))
        #expect(report.table().hasPrefix("nbus bench views: "))
        let page = ViewsHTMLReport.page(for: report, title: "nbus demo")
        #expect(page.contains("nbus demo") && page.contains("msgs posted (at most 1,120,000"), "the page's header")
        // task (main) and task (off-main) often deliver alike: their lines must not hide each
        // other (issue 40), so off-main and replay are dashed, each its own way, legend too.
        for style in [ViewStyle.taskOffMain, .taskReplay] {
            let pattern = try #require(style.dashPattern)
            #expect(page.contains(#"stroke="\#(ReportColors.color(of: style))" stroke-width="2.5" stroke-dasharray="\#(pattern)""#), "\(style) legend")
        }
        #expect(ViewStyle.taskMain.dashPattern != ViewStyle.taskOffMain.dashPattern)
    }

    @Test("machine load: /proc/loadavg and /proc/stat read, busy and steal over the run, a loaded run said so")
    func machineLoad() throws {
        let before = try #require(
            MachineLoad.Sample.parse(
                loadavg: "0.52 0.40 0.30 1/200 1234\n",
                stat: "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n"))
        #expect(before.total == 1_000 && before.idle == 800 && before.steal == 0 && before.loadAverage == 0.52)
        let after = try #require(
            MachineLoad.Sample.parse(loadavg: "3.10 1.00 0.50 3/210 1300\n", stat: "cpu  500 0 300 800 100 0 0 100 0 0\n"))
        let load = MachineLoad(before: before, after: after)
        // 800 jiffies more, 100 of them idle, 100 stolen.
        #expect(load.busyFraction == 0.875 && load.stealFraction == 0.125)
        #expect(load.loaded(cores: 2))
        #expect(load.description(cores: 2).hasPrefix("0.52 before, 3.10 after (1-minute average, 2 cores); CPU busy 88%, steal 12.5%"))
        #expect(MachineLoad.Sample.parse(loadavg: "", stat: "") == nil)
        // This machine's own /proc, as the demo reads it.
        #expect(MachineLoad.Sample.now() != nil)

        var context = RunContext.current()
        context.load = load
        #expect(context.lines.contains { $0.0 == "load" && $0.1.contains("steal 12.5%") })
        let report = ViewsReport(
            scenario: ViewsScenario(), date: Date(), wallNanoseconds: 1, results: ViewStyle.allCases.map { synthetic($0) },
            context: context)
        #expect(report.verdict.headline.contains("The machine was loaded during the run"), "\(report.verdict.headline)")
        #expect(report.table().contains("load 0.52 before"), "the table's Run line")
    }

    @Test("a bar at the top of its scale has its value above it, inside the chart, not on the bar")
    func valuesAboveBars() throws {
        let chart = SVGBarChart(
            title: "t", unit: "u", categories: ["a", "b"], series: ["x", "y", "z"],
            values: [[[1_000], [1_000], [999]], [[1_000], [500], [1_000]]])
        let svg = chart.svg()
        let bars = svg.matches(of: /<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="[\d.]+" fill="[^"]+"><title>/)
            .map { (x: Double($0.output.1) ?? 0, y: Double($0.output.2) ?? 0, width: Double($0.output.3) ?? 0) }
        let values = svg.matches(of: /<text class="value" x="([\d.]+)" y="([\d.]+)" font-size="([\d.]+)"/)
            .map { (x: Double($0.output.1) ?? 0, y: Double($0.output.2) ?? 0, size: Double($0.output.3) ?? 0) }
        try #require(bars.count == 6 && values.count == 6, "\(svg)")
        for (bar, value) in zip(bars, values) {
            #expect(value.x > bar.x && value.x < bar.x + bar.width + 2)
            // The baseline 3 px over the bar's top; the text's top under the title and unit lines (y 37).
            #expect(value.y <= bar.y - 3 + 0.05, "value at \(value.y), bar top \(bar.y)")
            #expect(value.y - value.size >= 40, "value at \(value.y) reaches the unit line")
        }
    }
}
