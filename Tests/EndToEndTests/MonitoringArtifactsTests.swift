#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport

/// The monitoring files docs/ ships (alerting rules, their unit tests, the broker's Grafana
/// dashboard) against promtool and against what real nbus processes export: a rule or a panel
/// that names a metric no nbus process has would stay silent or empty for ever, and nothing else
/// would say so.
@Suite("docs/ monitoring files: alert rules and the Grafana dashboard against real /metrics", .serialized, .timeLimit(.minutes(2)))
struct MonitoringArtifactsTests {
    static let promtool = findTool("promtool")
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs")
    static let rules = docs.appendingPathComponent("nbus-alerts.yml")
    static let rulesTests = docs.appendingPathComponent("nbus-alerts.test.yml")
    static let dashboard = docs.appendingPathComponent("nbus-broker-dashboard.json")

    /// promtool, or a recorded issue when it is missing as root (`make deps` installs it then).
    static func requirePromtool() -> URL? {
        if let promtool { return promtool }
        Issue.record("promtool is missing as root: make deps should have installed Debian's prometheus")
        return nil
    }

    @Test(
        "docs/nbus-alerts.yml passes promtool check rules, and its unit tests (nbus-alerts.test.yml) pass promtool test rules",
        .enabled(if: promtool != nil || getuid() == 0, "promtool is missing and this is not root (make deps installs Debian's prometheus as root)"))
    func alertRules() async throws {
        guard let promtool = Self.requirePromtool() else { return }
        let check = try await runTool(promtool, ["check", "rules", Self.rules.path])
        #expect(check.status == 0, "promtool check rules: \(check.output)")
        #expect(check.output.contains("SUCCESS"), "\(check.output)")
        let unit = try await runTool(promtool, ["test", "rules", Self.rulesTests.path])
        #expect(unit.status == 0, "promtool test rules: \(unit.output)")
        // Every alert of the file is exercised by at least one unit test.
        let tests = try String(contentsOf: Self.rulesTests, encoding: .utf8)
        for alert in try Self.alertNames() {
            #expect(tests.contains("alertname: \(alert)") || Self.untested.contains(alert), "no unit test names \(alert)")
        }
    }

    /// Alerts whose expression is a plain `increase(counter) > 0` like others that are tested.
    static let untested: Set<String> = [
        "NbusBrokerAcceptFailures", "NbusBrokerForwardingErrors", "NbusMemoryGuardReset",
        "NbusUnsentNotifications", "NbusMalformedFrames",
    ]

    static func alertNames() throws -> [String] {
        try String(contentsOf: rules, encoding: .utf8).split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("- alert: ") ? String(trimmed.dropFirst("- alert: ".count)) : nil
        }
    }

    /// The PromQL expressions of the rules file (`expr:` lines, and the folded `expr: >` blocks).
    static func ruleExpressions() throws -> [String] {
        let lines = try String(contentsOf: rules, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var expressions: [String] = []
        var index = 0
        while index < lines.count {
            let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
            index += 1
            guard trimmed.hasPrefix("expr:") else { continue }
            let rest = trimmed.dropFirst(5).trimmingCharacters(in: .whitespaces)
            guard rest == ">" else {
                expressions.append(rest)
                continue
            }
            var folded: [String] = []
            while index < lines.count, lines[index].hasPrefix("          ") {
                folded.append(lines[index].trimmingCharacters(in: .whitespaces))
                index += 1
            }
            expressions.append(folded.joined(separator: " "))
        }
        return expressions
    }

    /// Every PromQL query of the dashboard (panel targets and template variables), with Grafana's
    /// variables replaced by values Prometheus takes.
    static func dashboardQueries() throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard)) as? [String: Any]
        let panels = object?["panels"] as? [[String: Any]] ?? []
        var queries = panels.flatMap { panel in
            (panel["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }
        }
        let variables = (object?["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables where variable["type"] as? String == "query" {
            // label_values(METRIC, LABEL): the metric is what must exist.
            let definition = variable["definition"] as? String ?? ""
            if let open = definition.firstIndex(of: "("), let comma = definition.firstIndex(of: ",") {
                queries.append(String(definition[definition.index(after: open)..<comma]))
            }
        }
        return queries.map {
            $0.replacingOccurrences(of: "$__rate_interval", with: "1m").replacingOccurrences(of: "$instance", with: ".*")
        }
    }

    @Test(
        "every metric the alert rules and the dashboard name is on a real broker's or subscriber's /metrics, and every dashboard query parses",
        .enabled(if: promtool != nil || getuid() == 0, "promtool is missing and this is not root (make deps installs Debian's prometheus as root)"))
    func namesExist() async throws {
        guard let promtool = Self.requirePromtool() else { return }
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker(["--http", "127.0.0.1:0"])
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")
        let brokerPort = try #require(monitoringPort(in: broker.output.stderrText), "\(broker.describe())")
        // A subscriber with a memory guard (so nbus_bus_memory_limit_bytes is there), connected
        // while the broker is scraped (so the per-subscriber series are).
        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "dash.>", "--connect", backend, "--http", "127.0.0.1:0", "--max-memory", "512", "--metrics-interval", "0.2"])
        try #require(await subscriber.waitForStderr(containing: "monitoring on http://"), "\(subscriber.describe())")
        let subscriberPort = try #require(monitoringPort(in: subscriber.output.stderrText))
        let publisher = try await children.run(
            "publisher", ["publish", "dash.x", "hello", "--count", "5", "--connect", frontend, "--subscribers", "1"])
        #expect(publisher?.status == 0, "\(publisher?.stderrText ?? "")")
        #expect(await subscriber.waitForStdoutLines(5), "\(subscriber.describe())")

        let brokerMetrics = try httpGet(port: brokerPort, "/metrics").body
        let subscriberMetrics = try httpGet(port: subscriberPort, "/metrics").body
        let brokerNames = Self.sampleNames(brokerMetrics)
        let allNames = brokerNames.union(Self.sampleNames(subscriberMetrics))
        // What the scrapes must hold for the check to mean anything.
        #expect(brokerNames.contains("nbus_broker_subscriber_unsent_bytes"), "\(brokerMetrics)")
        #expect(brokerNames.contains("process_open_fds") && brokerNames.contains("nbus_build_info"), "\(brokerMetrics)")

        let dashboardQueries = try Self.dashboardQueries()
        #expect(dashboardQueries.count >= 20, "\(dashboardQueries)")
        for query in dashboardQueries {
            for name in PromQLNames.metricNames(in: query) {
                #expect(brokerNames.contains(name), "the dashboard's query names \(name), which the broker does not export: \(query)")
            }
        }
        let ruleExpressions = try Self.ruleExpressions()
        #expect(ruleExpressions.count == (try Self.alertNames()).count, "\(ruleExpressions)")
        for expression in ruleExpressions {
            for name in PromQLNames.metricNames(in: expression) {
                #expect(allNames.contains(name), "an alert names \(name), which neither a broker nor a subscriber exports: \(expression)")
            }
        }

        // The dashboard's queries as recording rules: promtool parses each (a typo in PromQL fails).
        let folder = try TempFolder()
        defer { folder.remove() }
        var file = "groups:\n  - name: dashboard\n    rules:\n"
        for (index, query) in dashboardQueries.enumerated() {
            let quoted = query.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            file += "      - record: dashboard:query_\(index)\n        expr: \"\(quoted)\"\n"
        }
        let path = folder.path + "/dashboard-rules.yml"
        try file.write(toFile: path, atomically: true, encoding: .utf8)
        let parsed = try await runTool(promtool, ["check", "rules", path])
        #expect(parsed.status == 0, "promtool check rules on the dashboard's queries: \(parsed.output)\n\(file)")
    }

    /// The names of the samples in an exposition (histograms as their `_bucket`, `_sum`, `_count`).
    static func sampleNames(_ exposition: String) -> Set<String> {
        Set(exposition.split(separator: "\n").compactMap { line -> String? in
            guard !line.hasPrefix("#") else { return nil }
            let name = line.prefix { $0 != "{" && $0 != " " }
            return name.isEmpty ? nil : String(name)
        })
    }

    @Test("the names PromQLNames finds: metrics, not functions, labels, keywords or durations")
    func nameExtraction() {
        #expect(
            PromQLNames.metricNames(in: #"sum by (direction) (rate(nbus_broker_bytes_total{instance=~"a.*", x="y z"}[5m] offset 1h))"#)
                == ["nbus_broker_bytes_total"])
        #expect(
            PromQLNames.metricNames(in: "(process_open_fds / process_max_fds > 0.8) and on (instance, job) nbus_build_info")
                == ["process_open_fds", "process_max_fds", "nbus_build_info"])
        #expect(PromQLNames.metricNames(in: "min_over_time(x_bytes[2m]) > 1e6 or vector(0)") == ["x_bytes"])
        #expect(PromQLNames.metricNames(in: "histogram_quantile(0.99, sum by (le) (rate(a_seconds_bucket[1m])))") == ["a_seconds_bucket"])
    }
}

/// The metric names a PromQL expression selects, found lexically: string literals, label
/// matchers (`{...}`), ranges (`[5m]`) and grouping clauses (`by (...)`) removed, then every
/// identifier that is not a function call (followed by `(`), a keyword or part of a number.
enum PromQLNames {
    static let keywords: Set<String> = [
        "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2",
    ]

    static func metricNames(in expression: String) -> [String] {
        // The identifier is matched possessively (`*+`): `rate(` is a call, never the name `rat`.
        var text = expression
        for pattern in [
            #""(\\.|[^"\\])*""#, #"'(\\.|[^'\\])*'"#, #"\{[^}]*\}"#, #"\[[^\]]*\]"#,
            #"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"#,
        ] {
            text = text.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        var names: [String] = []
        let identifier = try? NSRegularExpression(pattern: #"(?<![0-9A-Za-z_:.])[A-Za-z_:][A-Za-z0-9_:]*+(?!\s*\()"#)
        let range = NSRange(text.startIndex..., in: text)
        for match in identifier?.matches(in: text, range: range) ?? [] {
            guard let found = Range(match.range, in: text) else { continue }
            let name = String(text[found])
            if keywords.contains(name.lowercased()) || names.contains(name) { continue }
            names.append(name)
        }
        return names
    }
}
