import ArgumentParser
import BusBench
import Foundation

/// Output options `bench views` and `bench sweep` share.
struct ViewsOutputArguments: ParsableArguments {
    @Option(help: ArgumentHelp(
        "text (the table, default), json (one object) or csv (a header and one line per style), on stdout.",
        valueName: "format"))
    var format: BenchFormat?

    @Option(help: ArgumentHelp("Also write a self-contained HTML report with SVG charts here.", valueName: "path"))
    var html: String?

    @Flag(
        inversion: .prefixedNo,
        help: """
            A progress bar on stderr while the publisher posts (in place on a terminal, a line every \
            5 s otherwise). Default: on for the table, off with --format json or csv.
            """)
    var progress: Bool?

    @Flag(help: "Nothing on stderr but errors: no step lines, no progress.")
    var quiet = false

    /// The format asked for (the table by default).
    var outputFormat: BenchFormat { format ?? .text }
    var json: Bool { outputFormat == .json }
    var csv: Bool { outputFormat == .csv }

    /// Step lines unless --quiet; the bar when asked, or by default for the table.
    var display: ProgressDisplay {
        ProgressDisplay(steps: !quiet, bar: !quiet && (progress ?? !(json || csv)))
    }
}
