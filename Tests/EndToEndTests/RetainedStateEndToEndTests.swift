#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ToolSupport

// Retained values kept on disk (`nbus broker --state DIR`, issue 39 item 5), with real
// processes: a broker killed with SIGKILL and started again on the same directory serves the
// values (and clears) it had taken; a torn or corrupt log is reported in one warning line and
// the good records served; a second broker on a directory in use is refused. ipc in a temp folder.

@Suite("retained values kept on disk by nbus broker --state (real processes)", .serialized, .timeLimit(.minutes(3)))
struct RetainedStateEndToEndTests {
    /// Posts `lines` (JSON lines, `name` and `payload`) with --retain from one `nbus publish`
    /// that then exits.
    private func publishRetained(_ children: Children, frontend: String, _ posts: [(String, String)]) async throws {
        let publisher = try children.start(
            "publisher", ["publish", "x.any", "--lines", "--input", "json", "--retain", "--connect", frontend, "--timeout", "30"],
            withStdin: true)
        try publisher.writeStdinAndClose(posts.map { "{\"name\":\"\($0.0)\",\"payload\":\"\($0.1)\"}\n" }.joined())
        let published = await publisher.waitForExit(timeout: .seconds(60))
        expectExit(published, 0, publisher)
    }

    /// The broker's retained values under `x.>` (`nbus subscribe --retained-only`): name to
    /// payload, and whether every one was marked retained.
    private func retainedValues(_ children: Children, backend: String) async throws -> (values: [String: String], allMarked: Bool) {
        let reader = try children.start(
            "reader", ["subscribe", "x.>", "--retained-only", "--connect", backend, "--format", "json", "--timeout", "30"])
        let output = await reader.waitForExit(timeout: .seconds(60))
        expectExit(output, 0, reader)
        let objects = reader.output.stdoutText.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        var values: [String: String] = [:]
        for object in objects {
            if let name = object["name"] as? String { values[name] = object["payload"] as? String ?? "" }
        }
        return (values, objects.allSatisfy { $0["retained"] as? Bool == true })
    }

    /// Asks the broker for its values until they are `expected` (it took every post: each is in
    /// its log), at most 100 times.
    private func waitForValues(_ children: Children, backend: String, _ expected: [String: String]) async throws -> Bool {
        for _ in 0..<100 {
            if try await retainedValues(children, backend: backend).values == expected { return true }
        }
        return false
    }

    @Test("killed with SIGKILL and started again on the same --state: the values and a clear survive, marked retained")
    func valuesSurviveKill9() async throws {
        let children = try Children()
        defer { children.killAll() }
        let state = children.folder.file("state")
        let options = ["--retain-names", "100", "--state", state]
        let (broker, frontend, backend) = try await children.startBroker(options)
        try await publishRetained(children, frontend: frontend, [("x.a", "1"), ("x.b", "2"), ("x.c", "3"), ("x.a", "4"), ("x.c", "")])
        let expected = ["x.a": "4", "x.b": "2"]
        #expect(try await waitForValues(children, backend: backend, expected))

        broker.signal(SIGKILL)
        let killed = await broker.waitForExit()
        #expect(killed?.bySignal == true, "\(broker.describe())")

        let (restarted, _, backend2) = try await children.startBroker(options, name: "broker")
        let read = try await retainedValues(children, backend: backend2)
        #expect(read.values == expected, "\(restarted.describe())")
        #expect(read.allMarked)
        restarted.signal(SIGTERM)
        expectExit(await restarted.waitForExit(), 0, restarted)
    }

    @Test("a torn end and a flipped byte: one warning line, the good records served, the broker works on")
    func damagedLogIsReportedAndCut() async throws {
        let children = try Children()
        defer { children.killAll() }
        let state = children.folder.file("state")
        let options = ["--retain-names", "100", "--state", state]
        let (broker, frontend, backend) = try await children.startBroker(options)
        let posts = (1...6).map { ("x.k\($0)", "value-\($0)") }
        try await publishRetained(children, frontend: frontend, posts)
        #expect(try await waitForValues(children, backend: backend, Dictionary(uniqueKeysWithValues: posts)))
        broker.signal(SIGKILL)
        _ = await broker.waitForExit()

        // A byte flipped in the fourth record's frame: records 1-3 stay good.
        let log = state + "/retained.log"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: log)))
        var offset = 20  // the magic
        for _ in 0..<3 { offset += 8 + Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        bytes[offset + 8 + 20] ^= 0x40
        bytes += [0x55, 0x00, 0x00, 0x00, 1, 2, 3]  // and a torn record at the end
        try Data(bytes).write(to: URL(fileURLWithPath: log))

        let (restarted, frontend2, backend2) = try await children.startBroker(options)
        #expect(await restarted.waitForStderr(containing: "is damaged at byte \(offset)"), "\(restarted.describe())")
        #expect(restarted.output.stderrText.contains("loaded 3 records"), "\(restarted.describe())")
        #expect(try await retainedValues(children, backend: backend2).values == Dictionary(uniqueKeysWithValues: posts.prefix(3)))
        // It goes on keeping (and writing) values after the cut.
        try await publishRetained(children, frontend: frontend2, [("x.k9", "nine")])
        var expected = Dictionary(uniqueKeysWithValues: posts.prefix(3))
        expected["x.k9"] = "nine"
        #expect(try await waitForValues(children, backend: backend2, expected))
        restarted.signal(SIGKILL)
        _ = await restarted.waitForExit()

        // The cut file is whole again: the next start reads it all with no warning.
        let (third, _, backend3) = try await children.startBroker(options)
        #expect(try await retainedValues(children, backend: backend3).values == expected)
        #expect(!third.output.stderrText.contains("damaged"), "\(third.describe())")
    }

    /// Issue 39 item 3: a subscriber that reconnects through a restarted broker asks for its
    /// retained values again and says so; a value it has seen is not printed twice, one it has
    /// not is printed marked retained. Deterministic: while the subscriber's broker is down, a
    /// broker on other endpoints, on the same --state, takes a new value of x.a; then the first
    /// broker starts again on its endpoints with that state.
    @Test("a subscriber reconnecting through a restarted broker gets the retained values again, marked, no repeats")
    func reconnectingSubscriberGetsValuesAgain() async throws {
        let children = try Children()
        defer { children.killAll() }
        let state = children.folder.file("state")
        let options = ["--retain-names", "100", "--state", state]
        let (broker, frontend, backend) = try await children.startBroker(options)
        try await publishRetained(children, frontend: frontend, [("x.a", "1"), ("x.b", "2")])
        #expect(try await waitForValues(children, backend: backend, ["x.a": "1", "x.b": "2"]))

        let subscriber = try children.start(
            "subscriber", ["subscribe", "x.>", "--retained", "--connect", backend, "--format", "json", "--timeout", "120"])
        #expect(await subscriber.waitForStdoutLines(2), "\(subscriber.describe())")

        broker.signal(SIGKILL)
        _ = await broker.waitForExit()
        let (other, otherFrontend, otherBackend) = try await children.startBroker(options, name: "other")
        try await publishRetained(children, frontend: otherFrontend, [("x.a", "5")])
        #expect(try await waitForValues(children, backend: otherBackend, ["x.a": "5", "x.b": "2"]))
        other.signal(SIGTERM)
        expectExit(await other.waitForExit(), 0, other)

        let (restarted, _, _) = try await children.startBroker(options)
        #expect(
            await subscriber.waitForStderr(containing: "asked again for the retained values of 1 subscription(s)"),
            "\(subscriber.describe())\n\(restarted.describe())")
        #expect(await subscriber.waitForStdoutLines(3), "\(subscriber.describe())")
        // A repeat of x.b would come in the same snapshot as x.a's new value: one more value
        // through the restarted broker, live, after it, shows the snapshot is done.
        try await publishRetained(children, frontend: frontend, [("x.c", "7")])
        #expect(await subscriber.waitForStdoutLines(4), "\(subscriber.describe())")
        let output = await stopSubscriber(subscriber)
        let lines = subscriber.output.stdoutLines
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let printed = objects.compactMap { object -> String? in
            guard let name = object["name"] as? String, let payload = object["payload"] as? String else { return nil }
            return "\(name)=\(payload)\(object["retained"] as? Bool == true ? " retained" : "")"
        }
        #expect(Set(printed.prefix(2)) == ["x.a=1 retained", "x.b=2 retained"], "\(lines)")
        #expect(Array(printed.dropFirst(2)) == ["x.a=5 retained", "x.c=7"], "\(lines)")
        #expect(!lines.contains { $0.contains("\"gap\"") }, "\(lines)")
        #expect(
            summaryCounts(output?.stderrText, "subscribe", "lostUpstream", "retainedRenewals", "retainedRepeats") == [0, 1, 1],
            "\(subscriber.describe())")
    }

    /// Issue 39: the damage a start found is on /metrics (a counter, not only the log line),
    /// and promtool accepts the scrape.
    @Test("a damaged log found at start is counted on /metrics (bytes cut), promtool accepts the scrape")
    func damageIsOnMetrics() async throws {
        let children = try Children()
        defer { children.killAll() }
        let state = children.folder.file("state")
        let options = ["--retain-names", "100", "--state", state]
        let (broker, frontend, backend) = try await children.startBroker(options)
        try await publishRetained(children, frontend: frontend, [("x.a", "1"), ("x.b", "2")])
        #expect(try await waitForValues(children, backend: backend, ["x.a": "1", "x.b": "2"]))
        broker.signal(SIGKILL)
        _ = await broker.waitForExit()
        let log = state + "/retained.log"
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: log)))
        try Data(whole + [0x55, 0x00, 0x00, 0x00, 1, 2, 3]).write(to: URL(fileURLWithPath: log))  // a torn record

        let (restarted, _, _) = try await children.startBroker(options + ["--http", "127.0.0.1:0"])
        #expect(await restarted.waitForStderr(containing: "monitoring on http://"), "\(restarted.describe())")
        let port = try #require(monitoringPort(in: restarted.output.stderrText), "\(restarted.describe())")
        let body = try httpGet(port: port, "/metrics").body
        #expect(metricValue(body, "nbus_broker_retained_state_damaged_total") == 1, "\(body)")
        #expect(metricValue(body, "nbus_broker_retained_state_bytes_cut_total") == 7, "\(body)")
        #expect(metricValue(body, "nbus_broker_retained_state_write_failures_total") == 0, "\(body)")
        #expect(metricValue(body, "nbus_broker_retained_names") == 2, "\(body)")
        if let promtool = findTool("promtool") {
            let check = try await runTool(promtool, ["check", "metrics"], input: body)
            #expect(check.status == 0, "promtool check metrics: \(check.output)\n\(body)")
        }
        restarted.signal(SIGTERM)
        let stopped = await restarted.waitForExit()
        expectExit(stopped, 0, restarted)
        #expect(stopped?.stderrText.contains("--state: damaged log at start 1 (7 B cut), write failures 0") == true, "\(restarted.describe())")
    }

    @Test("a second broker on a --state directory in use is refused with a clear error")
    func secondBrokerOnTheSameDirectoryIsRefused() async throws {
        let children = try Children()
        defer { children.killAll() }
        let state = children.folder.file("state")
        _ = try await children.startBroker(["--retain-names", "10", "--state", state])
        let second = try children.start(
            "second",
            ["broker", "--frontend", children.folder.ipc("f2.sock"), "--backend", children.folder.ipc("b2.sock"),
             "--retain-names", "10", "--state", state])
        let output = await second.waitForExit(timeout: .seconds(60))
        #expect(output?.status == 2, "\(second.describe())")
        #expect(output?.stderrText.contains("--state \(state) is in use by another broker") == true, "\(second.describe())")
    }

    @Test("--state or --retain-bytes without --retain-names, a file, or 0 bytes: usage errors naming the flags")
    func invalidStateIsAUsageError() async throws {
        let children = try Children()
        defer { children.killAll() }
        let file = children.folder.file("plain")
        FileManager.default.createFile(atPath: file, contents: Data())
        for (arguments, words) in [
            (["--state", children.folder.file("s")], "--state needs --retain-names above 0"),
            (["--retain-names", "5", "--state", file], "--state must be a directory, not a file"),
            (["--retain-bytes", "5"], "--retain-bytes bounds the values --retain-names keeps: give --retain-names too"),
            (["--retain-names", "10", "--retain-bytes", "0"], "--retain-bytes must be 1 byte to 64 GiB (0 would keep nothing)"),
        ] {
            let output = try await children.run(
                "broker", ["broker", "--frontend", children.folder.ipc("f.sock"), "--backend", children.folder.ipc("b.sock")] + arguments)
            #expect(output?.status == 64, "\(arguments): \(output?.stderrText ?? "")")
            #expect(output?.stderrText.contains(words) == true, "\(arguments): \(output?.stderrText ?? "")")
        }
    }
}
