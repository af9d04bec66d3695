import Foundation

/// `nbus bench sweep`: the views scenario for each value of one parameter.
package struct ViewsSweepReport: Codable, Sendable {
    /// The parameter varied.
    package var parameter: SweepParameter
    /// The values as given, and one report per value, in order.
    package var values: [String]
    package var runs: [ViewsReport]

    /// Every run's failures, prefixed with its value.
    package var failures: [String] {
        zip(values, runs).flatMap { value, run in run.failures.map { "\(parameter.rawValue)=\(value): \($0)" } }
    }

    /// The value labels of the runs (as the charts show them).
    package var labels: [String] { runs.map { parameter.label(in: $0.scenario) } }

    /// The styles that ran in every run, in order.
    package var styles: [ViewStyle] {
        guard let first = runs.first else { return [] }
        return first.styles.map(\.style).filter { style in runs.allSatisfy { $0.summary(style) != nil } }
    }

    /// One JSON object (sorted keys).
    package func json() throws -> String {
        try ReportJSON.encode(self)
    }

    /// CSV: a header, then one line per value and style.
    package func csv() -> String {
        var lines = [ViewsReport.csvHeader]
        for (value, run) in zip(values, runs) {
            lines += run.csvRows(parameter: parameter.rawValue, value: value.trimmingCharacters(in: .whitespaces))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A compact grid (one line per value and style), then each run's targets.
    package func table() -> String {
        var lines: [String] = []
        let base = runs.first?.scenario.summary ?? ""
        lines.append("nbus bench sweep \(parameter.rawValue): \(labels.joined(separator: ", ")) (first run: \(base))")
        lines.append("")
        let header = [
            parameter.rawValue, "style", "published", "delivered", "handled", "bodies", "busy %", "ping p99",
            "p50", "p99", "p99.9", "upstream", "local", "hidden", "replayed", "CPU s", "RSS MB", "identity",
        ]
        var rows: [[String]] = [header]
        for (label, run) in zip(labels, runs) {
            for s in run.styles {
                rows.append([
                    label, s.style.rawValue, Format.count(Int(s.published)), Format.count(Int(s.delivered)),
                    Format.count(Int(s.handled)), Format.count(Int(s.bodyEvaluations)),
                    String(format: "%.1f", s.mainActorBusyPercent), Format.nanoseconds(Double(s.mainActorPing.p99)),
                    Format.nanoseconds(Double(s.latency.p50)), Format.nanoseconds(Double(s.latency.p99)),
                    Format.nanoseconds(Double(s.latency.p999)), Format.count(Int(s.lostUpstream)),
                    Format.count(Int(s.droppedLocalBuffer)), Format.count(Int(s.missedWhileHidden)),
                    Format.count(Int(s.replayed)), String(format: "%.2f", Double(s.cpuNanoseconds) / 1e9),
                    String(format: "%.1f", Double(s.peakResidentKiB) * 1_024 / 1e6), s.identityHolds ? "holds" : "FAILS",
                ])
            }
        }
        let widths = (0..<header.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(
                row.enumerated().map { column, cell in
                    let padding = String(repeating: " ", count: widths[column] - cell.count)
                    return column < 2 ? cell + padding : padding + cell
                }.joined(separator: "  "))
        }
        lines.append("")
        lines.append("Baselines, same invocation, per value (raw libzmq at the value's rate and payload; Foundation in-process)")
        for (label, run) in zip(labels, runs) {
            let raw = run.baselines.raw.map {
                "raw libzmq \(Format.rate($0.deliveredPerSecond))/s, p50 \($0.latency.map { Format.nanoseconds(Double($0.p50)) } ?? "-"), "
                    + "CPU/frame \(Format.nanoseconds($0.cpuPerFrameNanoseconds)), RSS "
                    + String(format: "%.1f MB", Double($0.peakResidentKiB) * 1_024 / 1e6)
            } ?? "raw libzmq: not run"
            let foundation = run.baselines.foundation.map {
                "Foundation \(Format.rate($0.deliveredPerSecond))/s, CPU/msg \(Format.nanoseconds($0.cpuPerNotificationNanoseconds))"
            } ?? "Foundation: not run"
            lines.append("  \(parameter.rawValue) = \(label): [baseline] \(raw); [baseline] \(foundation)")
            for ratio in run.rawRatios {
                lines.append(
                    "      \(ratio.style.rawValue) x raw: CPU/frame \(ViewsRawRatio.text(ratio.cpuPerFrame)), "
                        + "p50 \(ViewsRawRatio.text(ratio.latencyP50)), p99 \(ViewsRawRatio.text(ratio.latencyP99))")
            }
        }
        for (label, run) in zip(labels, runs) {
            lines.append("")
            lines.append("Targets at \(parameter.rawValue) = \(label)")
            for target in run.targets {
                lines.append("  [\(target.verdict)] \(target.requirement): \(target.measured)")
            }
        }
        let failures = self.failures
        if !failures.isEmpty {
            lines.append("")
            lines.append("ACCOUNTING FAILURES:")
            for failure in failures { lines.append("  " + failure) }
        }
        return lines.joined(separator: "\n")
    }
}

/// Runs the grid of a sweep.
package enum ViewsSweep {
    /// Runs `options.scenario` once per value of `parameter` (each value validated first), each
    /// run with its own baselines (the rate or the payload may differ).
    package static func run(
        parameter: SweepParameter, values: [String], options: ViewsBenchOptions,
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> ViewsSweepReport {
        try await run(parameter: parameter, values: values, options: options, handlers: BenchProgressHandlers(step: progress))
    }

    /// The same, with the posting progress of each run labelled `sweep i/n: parameter = value`.
    package static func run(
        parameter: SweepParameter, values: [String], options: ViewsBenchOptions, handlers: BenchProgressHandlers
    ) async throws -> ViewsSweepReport {
        guard !values.isEmpty else { throw BenchError.invalidOptions("--values needs at least one value") }
        let scenarios = try values.map { try parameter.apply($0, to: options.scenario) }
        var runs: [ViewsReport] = []
        for (index, scenario) in scenarios.enumerated() {
            try Task.checkCancellation()
            let label = "sweep \(index + 1)/\(scenarios.count): \(parameter.rawValue) = \(parameter.label(in: scenario))"
            handlers.step(label)
            var run = options
            run.scenario = scenario
            runs.append(try await ViewsBenchmark.run(run, handlers: handlers, label: label))
        }
        return ViewsSweepReport(parameter: parameter, values: values, runs: runs)
    }
}
