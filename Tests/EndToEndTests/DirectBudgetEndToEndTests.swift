#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// The direct topology (`nbus publish --bind`), real processes over ipc: the publisher keeps each
// subscriber's budget as the broker does. A subscriber stopped past its budget is disconnected
// (counted, logged, in the publisher's summary) so the healthy one goes on and loses nothing; the
// stopped one, resumed, reconnects and counts its loss exactly.
@Suite("direct topology: a binding publisher's per-subscriber budget (real processes)", .serialized, .timeLimit(.minutes(4)))
struct DirectBudgetEndToEndTests {
    @Test("past its budget, a binding publisher's stopped subscriber is disconnected and counts its loss exactly; the other loses nothing")
    func stoppedSubscriberPastBudget() async throws {
        let children = try Children()
        defer { children.killAll() }
        try await stoppedSubscriberPastBudget(children, endpoint: "ipc://\(children.folder.path)/direct.sock")
    }

    @Test("the same over tcp with CURVE: the connections come through the ZAP handler's monitor")
    func stoppedSubscriberPastBudgetWithCurve() async throws {
        let children = try Children()
        defer { children.killAll() }
        _ = try await TestKeys(children)
        // The publisher is the CURVE server (broker.key), admitting the listed subscriber key.
        // Paced at 5,000 a second: unpaced, a debug build's healthy subscriber decrypting and
        // printing on a loaded machine (load 8 to 17) fell past the 8 MiB budget itself and was
        // cut off too. Paced, the stopped one still passes its budget within seconds.
        try await stoppedSubscriberPastBudget(
            children, endpoint: "tcp://127.0.0.1:\(try DeploymentDocTests.freePort())", total: 100_000,
            publisherArguments: ["--curve-secret", "broker.key", "--allow-subscribers", "subs", "--rate", "5000"],
            subscriberArguments: TestKeys.client("subs/bob"))
    }

    private func stoppedSubscriberPastBudget(
        _ children: Children, endpoint: String, total: Int = 150_000, publisherArguments: [String] = [],
        subscriberArguments: [String] = []
    ) async throws {
        // 8 MiB: a 150,000 x 256 B burst (some 45 MB) is several budgets, and the test stays short.
        let publisher = try children.start(
            "publisher",
            ["publish", "feed.x", "--count", "\(total)", "--size", "256", "--bind", endpoint, "--subscriber-budget", "8",
             "--subscribers", "2", "--timeout", "30", "--close-timeout", "60"] + publisherArguments)
        let healthy = try children.start(
            "healthy", ["subscribe", "feed.x", "--connect", endpoint, "--count", "\(total)", "--timeout", "90"] + subscriberArguments)
        let stopped = try children.start(
            "stopped", ["subscribe", "feed.x", "--connect", endpoint, "--timeout", "90", "--format", "json"] + subscriberArguments)
        #expect(await healthy.waitForStdoutLines(1), "\(healthy.describe())")
        stopped.signal(SIGSTOP)
        // The publisher says so where a person reads it (a warning on its standard error).
        #expect(
            await publisher.waitForStderr(containing: "slow subscriber: disconnected subscriber", timeout: .seconds(60)),
            "\(publisher.describe())")
        // The healthy one gets everything while the other is still stopped: nobody waits for it.
        #expect(
            await healthy.waitForStdoutLines(total, timeout: .seconds(90)), "\(healthy.describe())\n\(publisher.describe())")
        stopped.signal(SIGCONT)
        let healthyOutput = await healthy.waitForExit(timeout: .seconds(60))
        expectExit(healthyOutput, 0, healthy)
        #expect(healthy.output.completeStdoutLineCount == total, "\(healthy.describe())")
        #expect(healthyOutput?.stderrText.contains("printed \(total); lost upstream 0,") == true, "\(healthy.describe())")
        // The publisher's close waits for the disconnected one to come back for the end of
        // stream, which tells it its tail: it reaches the last sequence, as a notification or a gap.
        #expect(
            await stopped.wait(timeout: .seconds(60)) { output in
                let tail = output.stdoutTailLines()
                return tail.contains { $0.contains("\"sequence\":\(total),") }
                    || parseGapLines(tail).contains { $0.sequences.upperBound == total }
            }, "\(stopped.describe())\n\(publisher.describe())")
        let published = await publisher.waitForExit(timeout: .seconds(60))
        expectExit(published, 0, publisher)
        let summary = published?.stderrText ?? ""
        #expect(summary.contains("posted \(total), sent \(total), unsent 0"), "\(publisher.describe())")
        #expect(summary.contains("disconnected 1 stalled subscriber(s) past their budget"), "\(publisher.describe())")
        // Nothing went past the healthy one: it never made the publisher wait for 10 s.
        #expect(!summary.contains("past slow subscribers"), "\(publisher.describe())")
        let stoppedOutput = await stopSubscriber(stopped)
        let lines = stoppedOutput?.stdoutLines ?? []
        let (_, lost) = expectExactAccounting(
            notifications: parseJSONLines(lines).notifications, gaps: parseGapLines(lines), published: total, at: "stopped")
        #expect(lost > 0, "the stopped subscriber lost nothing: it was not disconnected")
    }

    @Test("--subscriber-budget: only with --bind, not with --hwm, 0 to 1048576 MiB; a clear error (exit 64) otherwise")
    func subscriberBudgetOptionIsChecked() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = "ipc://\(children.folder.path)/checked.sock"
        let cases: [(arguments: [String], says: String)] = [
            (["--connect", endpoint, "--subscriber-budget", "8"], "applies to a publisher that binds"),
            (["--bind", endpoint, "--subscriber-budget", "8", "--hwm", "100"], "give one of them"),
            (["--bind", endpoint, "--subscriber-budget", "-1"], "must be 0"),
            (["--bind", endpoint, "--subscriber-budget", "1048577"], "must be 0"),
        ]
        for (index, item) in cases.enumerated() {
            let output = try await children.run("case \(index)", ["publish", "x.y", "--no-wait"] + item.arguments)
            #expect(output?.status == 64, "\(item.arguments): \(output?.stderrText ?? "")")
            #expect(output?.stderrText.contains(item.says) == true, "\(item.arguments): \(output?.stderrText ?? "")")
        }
    }
}
