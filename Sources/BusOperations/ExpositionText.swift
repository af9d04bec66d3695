/// Metric families written straight into the Prometheus text format (version 0.0.4), for the
/// figures that swift-prometheus's registry cannot hold well: values read at scrape time from the
/// system (`process_*`), and series whose label sets come and go between scrapes (one per
/// connected subscriber), which a registry would keep for ever once made.
///
/// Every family gets its `# HELP` and `# TYPE` lines (`promtool check metrics` wants both), label
/// values are escaped as the format says, and numbers are written as Prometheus reads them.
struct ExpositionText {
    /// The text so far, UTF-8.
    private(set) var bytes: [UInt8] = []

    /// The Prometheus types this writer uses.
    enum Kind: String {
        case counter, gauge
    }

    /// A family with one sample per label set (none: one unlabelled sample). A family with no
    /// samples still gets its HELP and TYPE lines, so a dashboard or rule finds the name.
    mutating func family(
        _ name: String, _ kind: Kind, help: String, samples: [(labels: [(String, String)], value: Double)]
    ) {
        append("# HELP \(name) \(Self.escapeHelp(help))\n")
        append("# TYPE \(name) \(kind.rawValue)\n")
        for sample in samples {
            var line = name
            if !sample.labels.isEmpty {
                line += "{" + sample.labels.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
            }
            line += " " + Self.number(sample.value) + "\n"
            append(line)
        }
    }

    /// One unlabelled sample.
    mutating func family(_ name: String, _ kind: Kind, help: String, value: Double) {
        family(name, kind, help: help, samples: [([], value)])
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// `value` as Prometheus parses it: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value: backslash, double quote and newline escaped.
    static func escapeLabel(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A HELP text: backslash and newline escaped.
    static func escapeHelp(_ text: String) -> String {
        text.replacingBackslashesAndNewlines()
    }
}

extension String {
    fileprivate func replacingBackslashesAndNewlines() -> String {
        var escaped = ""
        for character in self {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
