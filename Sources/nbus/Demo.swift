import ArgumentParser
import BusBench
import Foundation
import NotificationBus

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The articles' trade-offs, measured: onReceive against task, with real processes.",
        discussion: """
            Runs the default views scenario (3 tabs, 30 views, 20k msg/s, 10% selectivity, a tab \
            switch every 250 ms, 20 us of body cost) for each consumer style side by side: \
            onReceive, task on the main actor, task off it, and task with replay, after the \
            baselines (raw libzmq PUB/SUB at the same rate and payload, Foundation NotificationCenter \
            in-process). Prints the verdict first (which style kept up, which fell behind or lost \
            what and why, what each cost on the main actor, computed from the run), the run context \
            (build configuration, with a warning for a debug build; machine, cores, libzmq version, \
            commit, command line), the table (with the accounting identity checked per view), the \
            targets (each judged only in its own scenario) and a glossary; writes the same as an \
            HTML report with time series sampled every 250 ms. Then two more processes show a view \
            that appears after the last post of a retained price: with start: .retained it has the \
            current value at once, with the default start it waits for the next change (both \
            times in the table and the report). Exits 2 when the accounting identity fails or the \
            retained view did not have the value before the next post. --quick instead posts a few notifications over an embedded bus and prints them.
            """)

    @Option(parsing: .unconditional, help: ArgumentHelp("Length of the run in seconds, baselines included.", valueName: "seconds"))
    var seconds: Double = 30

    @Option(name: .customLong("baseline-seconds"), parsing: .unconditional, help: "Seconds of each baseline (0: none).")
    var baselineSeconds: Double = 2

    @Flag(inversion: .prefixedNo, help: "A progress bar on stderr while the publisher posts.")
    var progress = true

    @Option(help: ArgumentHelp("Where to write the HTML report.", valueName: "path"))
    var html: String = "report.html"

    @OptionGroup var output: BenchJSONOption

    @Flag(help: "Just post a few notifications in one process and print them decoded.")
    var quick = false

    @Option(name: .shortAndLong, parsing: .unconditional, help: "With --quick: how many notifications to post (1-10000).")
    var count: Int = 5

    func validate() throws {
        guard (1...10_000).contains(count) else { throw ValidationError("--count must be between 1 and 10000") }
        try SecondsOption.check(seconds, "--seconds", in: 0.001...3_600)
        try SecondsOption.check(baselineSeconds, "--baseline-seconds", in: 0...600)
    }

    func run() async throws {
        if quick {
            try await EmbeddedDemo.run(count: count) { print($0) }
            return
        }
        let display = ProgressDisplay(steps: true, bar: progress)
        let options = ViewsDemoOptions(seconds: seconds, htmlPath: html, baselineSeconds: baselineSeconds)
        // Ctrl-C stops every child (SIGTERM, then SIGKILL) before the command exits 130.
        let json = output.json
        let report = try await runInterruptibly(display) {
            try await ViewsDemo.run(
                options,
                output: { text in
                    display.finish()
                    if !json { writeStandardOutput(text + "\n") }
                }, handlers: display.handlers)
        }
        // --format json: the report as one object (what `bench views --format json` prints) instead of the table.
        if json { writeStandardOutput(try report.json() + "\n") }
        if !report.failures.isEmpty { throw ExitCode(2) }
    }
}
