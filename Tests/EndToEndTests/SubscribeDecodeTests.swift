#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport

/// `nbus subscribe --decode` (issue 42, item 5): a payload that does not decode is counted per
/// pattern (summary, `/metrics`), never printed nor a crash; the ones that decode print as before.
@Suite("nbus subscribe --decode", .timeLimit(.minutes(2)))
struct SubscribeDecodeTests {
    /// What one publisher posts, in order (`publish --lines --input json`): `json` and `auto`
    /// say which of them a `--decode json` or `--decode auto` subscriber prints.
    static let posts: [(line: String, json: Bool, auto: Bool)] = [
        (#"{"name":"d.bad","payload":"{\"id\": ","contentType":"json"}"#, false, false),
        (#"{"name":"d.bad","payload":"[1,","contentType":"json"}"#, false, false),
        (#"{"name":"d.text","payload":"hello","contentType":"text"}"#, false, true),
        (#"{"name":"d.text","payloadBase64":"/w==","contentType":"text"}"#, false, false),
        (#"{"name":"d.good","payload":{"id":1},"contentType":"json"}"#, true, true),
        (#"{"name":"d.good","payload":[1,2]}"#, true, true),
        (#"{"name":"d.good","payload":"nope"}"#, false, true),
        (#"{"name":"d.good","payload":{"id":2},"contentType":"json"}"#, true, true),
        (#"{"name":"d.x","payload":"\u0001","contentType":"cbor"}"#, false, true),
    ]

    @Test("--decode json and auto: undecodable counted per pattern in the summary and /metrics, good lines as without --decode")
    func undecodableIsCounted() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("decode.sock")
        let patterns = ["d.good", "d.>"]
        // The publisher binds only after the json subscriber's monitoring is up: on a loaded
        // machine that can pass the 10 s `--connect-timeout` default, so the subscribers wait for
        // it without one (`--timeout` bounds them).
        let common = patterns + ["--connect", endpoint, "--timeout", "60", "--connect-timeout", "0"]
        let plain = try children.start("plain", ["subscribe"] + common + ["--format", "json", "--count", "\(Self.posts.count)"])
        let json = try children.start(
            "json",
            ["subscribe"] + common + ["--format", "json", "--decode", "json", "--stats", "--http", "127.0.0.1:0", "--metrics-interval", "0.1"])
        let auto = try children.start(
            "auto", ["subscribe"] + common + ["--decode", "auto", "--count", "\(Self.posts.filter(\.auto).count)"])
        try #require(await json.waitForStderr(containing: "monitoring on http://"), "\(json.describe())")
        let port = try #require(monitoringPort(in: json.output.stderrText))
        // The wait is for d.wait, which only d.> matches: the pattern each subscriber sends last.
        let publisher = try children.start(
            "publisher",
            ["publish", "d.wait", "--lines", "--input", "json", "--bind", endpoint, "--subscribers", "3", "--timeout", "30"],
            withStdin: true)
        try publisher.writeStdinAndClose(Self.posts.map(\.line).joined(separator: "\n") + "\n")
        expectExit(await publisher.waitForExit(), 0, publisher)

        // Without --decode: every post. With it: only the ones that decode, the same lines.
        let plainOutput = await plain.waitForExit()
        expectExit(plainOutput, 0, plain)
        let plainLines = plain.output.stdoutLines
        try #require(plainLines.count == Self.posts.count, "\(plain.describe())")
        #expect(await json.waitForStdoutLines(3), "\(json.describe())")
        let metrics = try #require(
            await eventually {
                let body = try httpGet(port: port, "/metrics").body
                return metricValue(body, #"nbus_subscription_undecodable_total{pattern="d.>"}"#) == 5 ? body : nil
            }, "\(json.describe())")
        #expect(metricValue(metrics, #"nbus_subscription_undecodable_total{pattern="d.good"}"#) == 1, "\(metrics)")
        if let promtool = OperationsTests.promtool {
            let check = try await runTool(promtool, ["check", "metrics"], input: metrics)
            #expect(check.status == 0 && check.output.isEmpty, "promtool check metrics: \(check.output)\n\(metrics)")
        } else if getuid() == 0 {
            Issue.record("promtool is missing as root: make deps should have installed Debian's prometheus")
        }
        let jsonOutput = await stopSubscriber(json)
        // Each pattern prints from its own task, so lines of different names interleave as they
        // will; the good posts are d.good's 1st, 2nd and 4th, all through pattern d.good, in order.
        let expectedLines = plainLines.filter { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
            return object["name"] as? String == "d.good" && [1, 2, 4].contains((object["sequence"] as? NSNumber)?.intValue ?? 0)
        }
        #expect(expectedLines.count == Self.posts.filter(\.json).count, "\(plain.describe())")
        #expect(json.output.stdoutLines == expectedLines, "\(json.describe())")
        let summary = try #require(summaryObject(jsonOutput?.stderrText, "subscribe"), "\(json.describe())")
        #expect((summary["undecodable"] as? NSNumber)?.intValue == 6, "\(summary)")
        #expect((summary["printed"] as? NSNumber)?.intValue == 3, "\(summary)")
        let perPattern = (summary["patterns"] as? [[String: Any]] ?? []).map {
            ($0["pattern"] as? String ?? "?", ($0["undecodable"] as? NSNumber)?.intValue ?? -1)
        }
        #expect(perPattern.map(\.0) == patterns && perPattern.map(\.1) == [1, 5], "\(summary)")
        // The first of each pattern is said on stderr, with its reason.
        let stderr = jsonOutput?.stderrText ?? ""
        #expect(stderr.contains("undecodable d.good seq=3: not a JSON text"), "\(stderr)")
        #expect(stderr.contains("undecodable d.bad seq=1: not a JSON text"), "\(stderr)")

        // --decode auto, text summary: malformed JSON and text that is not UTF-8, 3, all under d.>.
        let autoOutput = await auto.waitForExit()
        expectExit(autoOutput, 0, auto)
        let autoLines = auto.output.stdoutLines
        #expect(autoLines.count == Self.posts.filter(\.auto).count, "\(auto.describe())")
        #expect(autoLines.allSatisfy { !$0.hasPrefix("d.bad ") }, "\(autoLines)")
        let last = autoOutput?.stderrText.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("nbus subscribe: printed 6;") && last.contains("; undecodable 3 ("), "\(auto.describe())")
        // Without --decode the text summary says nothing of it, and the JSON field is 0.
        #expect(summaryCounts(plainOutput?.stderrText, "subscribe", "undecodable") == [0], "\(plain.describe())")
    }

    @Test("--decode json: a retained clear (no payload) is printed, not counted undecodable")
    func retainedClearIsNotUndecodable() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("clear.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "c.y", "--connect", endpoint, "--decode", "json", "--format", "json", "--count", "1", "--timeout", "30"])
        let publisher = try children.start(
            "publisher", ["publish", "c.y", "", "--retain", "--content-type", "json", "--bind", endpoint, "--timeout", "30"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        let output = await subscriber.waitForExit()
        expectExit(output, 0, subscriber)
        #expect(subscriber.output.stdoutLines.count == 1, "\(subscriber.describe())")
        #expect(summaryCounts(output?.stderrText, "subscribe", "undecodable") == [0], "\(subscriber.describe())")
        #expect(output?.stderrText.contains("undecodable c.y") == false, "\(subscriber.describe())")
    }

    @Test("--decode json with --count: undecodable ones do not count towards it; exit 0 once the good ones are printed")
    func countIsOfDecodedOnes() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("count.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "c.x", "--connect", endpoint, "--decode", "json", "--count", "2", "--timeout", "30"])
        let publisher = try children.start(
            "publisher", ["publish", "c.x", "--lines", "--bind", endpoint, "--timeout", "30"], withStdin: true)
        // A trailing comma and 129 nested arrays: JSON that Foundation reads but BusJSON, and so
        // every typed observer, refuses; --decode json judged them by Foundation once.
        let deep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        try publisher.writeStdinAndClose(["not json", "{\"a\":1}", "{\"a\"", "{\"a\":1,}", deep, "2"].joined(separator: "\n") + "\n")
        expectExit(await publisher.waitForExit(), 0, publisher)
        let output = await subscriber.waitForExit()
        expectExit(output, 0, subscriber)
        let payloads = subscriber.output.stdoutLines.map { $0.components(separatedBy: " payload=").last ?? "" }
        #expect(payloads == ["{\"a\":1}", "2"], "\(subscriber.describe())")
        let last = output?.stderrText.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("nbus subscribe: printed 2;") && last.contains("; undecodable 4 ("), "\(subscriber.describe())")
    }
}
