#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// `nbus bench views --typed` (issue 42, item 7): the scenario with a message type, run briefly
/// by the real command (a publisher process and one host process per style).
@Suite("nbus bench views --typed", .serialized, .timeLimit(.minutes(3)))
struct BenchViewsTypedTests {
    @Test("A short typed run: every style's identity holds, onReceive handles every message, the report says typed")
    func typedRun() async throws {
        let children = try Children()
        defer { children.killAll() }
        let tmp = children.folder.path + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        // Bounded both ways: 1,200 notifications or 1 s of posting, whichever comes first.
        let common = [
            "bench", "views", "--typed", "--seconds", "1", "--count", "1200", "--rate", "1200", "--views", "4", "--names", "4",
            "--tabs", "2", "--churn-interval", "0.1", "--baseline-seconds", "0", "--drain-seconds", "20",
        ]
        let json = try children.start("bench views --typed", common + ["--format", "json", "--quiet"], environment: ["TMPDIR": tmp])
        let output = await json.waitForExit(timeout: .seconds(150))
        expectExit(output, 0, json)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data((output?.stdoutText ?? "").utf8)) as? [String: Any], "\(json.describe())")
        let scenario = report["scenario"] as? [String: Any] ?? [:]
        #expect(scenario["typed"] as? Bool == true, "\(scenario)")
        #expect((report["failures"] as? [Any])?.isEmpty == true, "\(report["failures"] ?? "")")
        let posted = (report["publisher"] as? [String: Any]).flatMap { publisher in
            (publisher["postedPerName"] as? [NSNumber])?.reduce(0) { $0 + $1.intValue }
        }
        let styles = report["styles"] as? [[String: Any]] ?? []
        #expect(styles.count == 4, "\(styles.map { $0["style"] ?? "?" })")
        for style in styles {
            let name = style["style"] as? String ?? "?"
            #expect(style["identityHolds"] as? Bool == true, "\(name): \(style["identityFailures"] ?? "")")
            #expect((style["published"] as? NSNumber)?.intValue == posted && (posted ?? 0) > 0, "\(name)")
            if name == "onReceive" {
                // Every message decoded and handed to its view: none undecodable, none lost.
                #expect(style["delivered"] as? NSNumber == style["published"] as? NSNumber, "\(style)")
            }
        }
    }

    @Test("The text report names the run as typed; without --typed it does not")
    func textSaysTyped() async throws {
        let children = try Children()
        defer { children.killAll() }
        let tmp = children.folder.path + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        let common = [
            "bench", "views", "--seconds", "0.3", "--count", "200", "--rate", "1000", "--views", "2", "--names", "2",
            "--container", "none", "--styles", "onReceive", "--baseline-seconds", "0", "--drain-seconds", "20", "--no-progress",
        ]
        let typed = try children.start("typed", common + ["--typed"], environment: ["TMPDIR": tmp])
        let typedOutput = await typed.waitForExit(timeout: .seconds(100))
        expectExit(typedOutput, 0, typed)
        #expect(typedOutput?.stdoutText.contains("typed messages (ViewsBenchMessage as JSON") == true, "\(typed.describe())")
        let bytes = try children.start("bytes", common, environment: ["TMPDIR": tmp])
        let bytesOutput = await bytes.waitForExit(timeout: .seconds(100))
        expectExit(bytesOutput, 0, bytes)
        #expect(bytesOutput?.stdoutText.contains("typed messages") == false, "\(bytes.describe())")
    }
}
