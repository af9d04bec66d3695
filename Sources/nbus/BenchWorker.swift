import ArgumentParser
import BusBench
import Foundation

/// The hidden command every benchmark starts its worker processes with; the arguments are
/// built and read back in BusBench (`BenchWorkerCommand`), so this only hands them over.
struct BenchWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "A worker process of `nbus bench` (started by the benchmarks, with their options as JSON).",
        discussion: """
            The benchmarks start their workers with this command; it can be run by hand to measure \
            one side alone. OPTIONS is a JSON object: keys left out keep their defaults; a required \
            key missing or an unknown key is named in the error (exit 64). A paced publisher and \
            its subscriber, for example:

              nbus bench worker throughput \\
                '{"role":"publisher","endpoint":"ipc:///tmp/w","count":2000,"rate":1000}'
              nbus bench worker throughput \\
                '{"role":"subscriber","endpoint":"ipc:///tmp/w","count":2000}'

            Results are JSON lines on stdout. Exit status 3: stdin closed (with \
            "exitOnStandardInputEOF":true, as the benchmarks start them); 4: the hard deadline.
            """,
        shouldDisplay: false
    )

    @Argument(help: "The benchmark the worker belongs to: throughput, overload, views or requests.")
    var kind: BenchWorkerCommand.Kind

    @Argument(help: "The worker's options, as JSON (written by the benchmark that starts it).")
    var options: String

    func run() async throws {
        let status = await BenchWorkerCommand.run(kind: kind, options: options)
        if status != 0 { throw ExitCode(status) }
    }
}
