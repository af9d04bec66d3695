import ArgumentParser
import BusBench
import NotificationBus

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The articles' trade-offs, measured: onReceive against task, with real processes.",
        discussion: """
            Runs the default views scenario (3 tabs, 30 views, 20k msg/s, 10% selectivity, a tab \
            switch every 250 ms, 20 us of body cost) for each consumer style side by side: \
            onReceive, task on the main actor, task off it, and task with replay. Prints the table \
            (with the accounting identity checked per view) and writes an HTML report. \
            --quick instead posts a few notifications over an embedded bus and prints them.
            """)

    @Option(help: ArgumentHelp("Length of the run in seconds.", valueName: "seconds"))
    var seconds: Double = 30

    @Option(help: ArgumentHelp("Where to write the HTML report.", valueName: "path"))
    var html: String = "report.html"

    @Flag(help: "Just post a few notifications in one process and print them decoded.")
    var quick = false

    @Option(name: .shortAndLong, help: "With --quick: how many notifications to post (1-10000).")
    var count: Int = 5

    func validate() throws {
        guard (1...10_000).contains(count) else { throw ValidationError("--count must be between 1 and 10000") }
        guard seconds > 0, seconds <= 3_600 else { throw ValidationError("--seconds must be between 0 and 3600") }
    }

    func run() async throws {
        if quick {
            try await EmbeddedDemo.run(count: count) { print($0) }
            return
        }
        // Ctrl-C keeps its default action here: the workers exit when this process goes (they watch stdin).
        let report = try await ViewsDemo.run(ViewsDemoOptions(seconds: seconds, htmlPath: html))
        if !report.failures.isEmpty { throw ExitCode(2) }
    }
}
