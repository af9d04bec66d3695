import ArgumentParser

/// `--format text|json` of the benchmarks that print a table or one JSON object.
struct BenchJSONOption: ParsableArguments {
    @Option(help: ArgumentHelp("text (the table, default) or json (one object), on stdout.", valueName: "format"))
    var format: BenchFormat?

    func validate() throws {
        if format == .csv { throw ValidationError("--format csv is for bench views and bench sweep; here: text or json") }
    }

    var json: Bool { format == .json }
}
