import Foundation

/// What `nbus demo` runs: the default views scenario for about 30 s, a retained-views step (about
/// 1 s: a view that appears after the last post of a retained name), a table, and `report.html`.
package struct ViewsDemoOptions: Sendable {
    /// The scenario: 3 tabs, 30 views, 20k msg/s, 10% selectivity, a tab switch every 250 ms,
    /// 20 us body cost, every style, for `seconds`.
    package var scenario: ViewsScenario
    /// Where the HTML report goes (nil: none).
    package var htmlPath: String?
    /// The `nbus` executable and the arguments of its hidden views worker command.
    package var nbusExecutable: String
    package var workerCommand: [String]
    /// Seconds of each baseline (raw libzmq, Foundation), taken out of `seconds`.
    package var baselineSeconds: Double

    /// `seconds` is the whole run: the baselines (2 s), the retained-views step (1 s) and the
    /// scenario for the rest, so the default demo stays about 30 s.
    package init(
        seconds: Double = 30, htmlPath: String? = "report.html", workerCommand: [String] = BenchWorkerCommand.nbusSubcommand,
        baselineSeconds: Double = 2
    ) {
        // The retained-views step takes about 1 s of it too (two short processes).
        let retainedSeconds: Double = seconds >= 10 ? 1 : 0
        let scenarioSeconds = (seconds >= 4 * baselineSeconds ? seconds - baselineSeconds : seconds) - retainedSeconds
        scenario = ViewsDemo.defaultScenario(seconds: scenarioSeconds)
        self.htmlPath = htmlPath
        nbusExecutable = ThroughputOptions.currentExecutable()
        self.workerCommand = workerCommand
        self.baselineSeconds = baselineSeconds
    }
}

/// The demo entry point: runs the default scenario, prints the table, writes the HTML report.
package enum ViewsDemo {
    /// The default scenario: 3 tabs, 30 views, 20k msg/s, 10% selectivity, tab switch
    /// every 250 ms, 20 us body cost, ipc, all four styles side by side.
    package static func defaultScenario(seconds: Double = 30) -> ViewsScenario {
        var scenario = ViewsScenario()
        scenario.transport = .ipc
        scenario.rate = 20_000
        scenario.views = 30
        scenario.names = 30
        scenario.container = .tabs
        scenario.tabs = 3
        scenario.selectivity = 0.1
        scenario.churnMilliseconds = 250
        scenario.bodyMicroseconds = 20
        scenario.seconds = seconds
        scenario.count = max(1, Int(seconds * 20_000 * 2))
        scenario.styles = ViewStyle.allCases
        return scenario
    }

    /// Runs the demo: progress lines go to `progress` (stderr, say), the table to `output`
    /// (stdout), the page to `options.htmlPath`. Returns the report; its `failures` are
    /// non-empty when the accounting identity failed (the caller should then exit non-zero).
    /// Throws `BenchError` when a child process fails.
    package static func run(
        _ options: ViewsDemoOptions = ViewsDemoOptions(),
        output: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) },
        progress: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) async throws -> ViewsReport {
        try await run(options, output: output, handlers: BenchProgressHandlers(step: progress))
    }

    /// The same, with the posting progress reported to `handlers.posting` (labelled `demo`).
    package static func run(
        _ options: ViewsDemoOptions, output: @escaping @Sendable (String) -> Void, handlers: BenchProgressHandlers
    ) async throws -> ViewsReport {
        var bench = ViewsBenchOptions(scenario: options.scenario, workerCommand: options.workerCommand)
        bench.nbusExecutable = options.nbusExecutable
        bench.baselineExecutable = (ThroughputOptions.executableDirectory(of: options.nbusExecutable) as NSString)
            .appendingPathComponent("nbus-baseline")
        bench.baselineSeconds = options.baselineSeconds
        handlers.step("nbus demo: \(options.scenario.summary)")
        var report = try await ViewsBenchmark.run(bench, handlers: handlers, label: "demo")
        // Issue 39: a view that appears after the last post of a retained name, two processes.
        handlers.step("retained views: a price posted retained, then two views appear (start: .retained, start: .now)")
        let retained = try await ViewsBenchmark.withChildren(prefix: "nbus-retained") { group, folder in
            try await RetainedViewsDemo.run(
                nbusExecutable: options.nbusExecutable, workerCommand: options.workerCommand, group: group, folder: folder,
                progress: handlers.step)
        }
        report.add(retainedViews: retained)
        // The report's absolute path: a relative --html is the working folder's, which the reader
        // of the table (or of a log) may not know.
        let written = options.htmlPath.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        if let path = options.htmlPath, let written {
            try ViewsHTMLReport.page(for: report, title: "nbus demo").write(toFile: path, atomically: true, encoding: .utf8)
            handlers.step("wrote \(written)")
        }
        output(report.table(command: "nbus demo"))
        if let written { output("report: \(written)") }
        return report
    }
}
