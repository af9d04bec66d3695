import ArgumentParser

/// What the benchmarks print on stdout: the table, one JSON object, or (views, sweep) CSV.
enum BenchFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, csv
}
