#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Processes whose command line mentions `text` (read from /proc), other than this test process.
private func processes(mentioning text: String) -> [Int32] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    return entries.compactMap { entry -> Int32? in
        guard let pid = Int32(entry), pid != getpid(),
            let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
            String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self).contains(text)
        else { return nil }
        return pid
    }
}

@Suite("nbus bench: Ctrl-C stops every child", .serialized, .timeLimit(.minutes(1)))
struct BenchInterruptTests {
    @Test("SIGINT during bench views: the publisher and every host are stopped and reaped, exit 130")
    func viewsInterrupted() async throws {
        let children = try Children()
        defer { children.killAll() }
        // The runner makes its ipc folder under TMPDIR, and passes it to every worker on the command line.
        let tmp = children.folder.path + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        let runner = try children.start(
            "bench views",
            ["bench", "views", "--seconds", "60", "--rate", "1000", "--views", "4", "--names", "4", "--baseline-seconds", "0",
             "--no-progress"],
            environment: ["TMPDIR": tmp])
        let ready = await runner.wait { $0.stderrText.contains("host(s) ready") || $0.terminated }
        try #require(ready && !runner.output.terminated, "\(runner.describe())")
        // The publisher and the four hosts are running.
        #expect(processes(mentioning: tmp).count == 5, "\(processes(mentioning: tmp))")

        runner.signal(SIGINT)
        let output = await runner.waitForExit(timeout: .seconds(20))
        expectExit(output, 130, runner)
        #expect(output?.stderrText.contains("interrupted (signal 2): every child process stopped") == true, "\(runner.describe())")
        #expect(processes(mentioning: tmp).isEmpty, "left behind: \(processes(mentioning: tmp))")
    }
}
