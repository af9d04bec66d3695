#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ToolSupport

// Retained values (NBP-1 §18) with real processes: `nbus publish --retain` posts 1,000 names and
// exits; an `nbus subscribe --retained` started afterwards through `nbus broker --retain-names`
// prints all 1,000 current values, marked retained, then a live one, with no loss counted; past
// the broker's bound the oldest values are evicted, counted and logged. ipc in a temp folder.

/// `/usr/bin/env` when python3 with pyzmq is there (the Python consumer's test), else nil.
private let pythonWithZMQ: URL? = {
    guard let probe = try? SpawnedProcess.run("/usr/bin/env", ["python3", "-c", "import zmq"]) else { return nil }
    return probe.status == 0 ? URL(fileURLWithPath: "/usr/bin/env") : nil
}()

@Suite("retained values through nbus broker (real processes)", .serialized, .timeLimit(.minutes(3)))
struct RetainedValuesEndToEndTests {
    /// `count` names, each posted twice (v1 then v2) with --retain by one `nbus publish --lines`
    /// that then exits.
    private func publishRetained(_ children: Children, frontend: String, names count: Int) async throws {
        let publisher = try children.start(
            "publisher",
            ["publish", "state.k", "--lines", "--input", "json", "--retain", "--connect", frontend, "--timeout", "30"],
            withStdin: true)
        var lines = ""
        for version in 1...2 {
            for index in 1...count { lines += "{\"name\":\"state.k\(index)\",\"payload\":\"v\(version)\"}\n" }
        }
        try publisher.writeStdinAndClose(lines)
        let published = await publisher.waitForExit(timeout: .seconds(60))
        expectExit(published, 0, publisher)
        #expect(published?.stderrText.contains("unsent 0") == true, "\(publisher.describe())")
    }

    @Test("A retained state printed by --retained-only --format json is posted again by publish --lines --input json")
    func retainedStateCopiedToAnotherBroker() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontendA, backendA) = try await children.startBroker(["--retain-names", "100"], name: "a")
        let (_, frontendB, backendB) = try await children.startBroker(["--retain-names", "100"], name: "b")
        try await publishRetained(children, frontend: frontendA, names: 3)
        let dump = try #require(
            await children.run("dump", ["subscribe", "state.>", "--retained-only", "--format", "json", "--connect", backendA, "--timeout", "30"]))
        #expect(dump.status == 0, "\(dump.stderrText)")
        let dumped = dump.stdoutText.split(separator: "\n").map(String.init)
        try #require(dumped.count == 3, "\(dump.stdoutText)")
        // The lines carry `retained` and `flags` 3: read back, each is posted retained.
        let copy = try children.start(
            "copy", ["publish", "state.k1", "--lines", "--input", "json", "--connect", frontendB, "--timeout", "30"], withStdin: true)
        try copy.writeStdinAndClose(dumped.joined(separator: "\n") + "\n")
        let copied = await copy.waitForExit(timeout: .seconds(60))
        expectExit(copied, 0, copy)
        let check = try #require(
            await children.run("check", ["subscribe", "state.>", "--retained-only", "--format", "json", "--connect", backendB, "--timeout", "30"]))
        #expect(check.status == 0, "\(check.stderrText)")
        let objects = check.stdoutText.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(Set(objects.compactMap { $0["name"] as? String }) == ["state.k1", "state.k2", "state.k3"], "\(check.stdoutText)")
        #expect(objects.allSatisfy { $0["payload"] as? String == "v2" && $0["retained"] as? Bool == true }, "\(check.stdoutText)")
    }

    @Test("1,000 names posted by a publisher that exited: a subscriber started afterwards gets all 1,000, marked, then live ones, no loss")
    func laterSubscriberGetsEveryCurrentValue() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker(["--retain-names", "5000"])
        try await publishRetained(children, frontend: frontend, names: 1_000)

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "state.>", "--retained", "--connect", backend, "--format", "json", "--count", "1001",
             "--timeout", "60"])
        #expect(await subscriber.waitForStdoutLines(1_000, timeout: .seconds(60)), "\(subscriber.describe())")
        let live = try children.start("live", ["publish", "state.k1", "now", "--connect", frontend, "--timeout", "30"])
        expectExit(await live.waitForExit(timeout: .seconds(60)), 0, live)
        let output = await subscriber.waitForExit(timeout: .seconds(60))
        expectExit(output, 0, subscriber)

        let lines = subscriber.output.stdoutText.split(separator: "\n").map(String.init)
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 1_001)
        let retained = objects.prefix(1_000)
        #expect(retained.allSatisfy { $0["retained"] as? Bool == true })
        #expect(retained.allSatisfy { $0["payload"] as? String == "v2" && ($0["sequence"] as? NSNumber)?.intValue == 2 })
        #expect(Set(retained.compactMap { $0["name"] as? String }).count == 1_000)
        let last = try #require(objects.last)
        #expect(last["retained"] == nil && last["payload"] as? String == "now", "\(last)")
        // No loss; each name's first post (v1) is the history before its retained value: joined late.
        #expect(
            summaryCounts(output?.stderrText, "subscribe", "printed", "lostUpstream", "streamsJoinedLate", "notificationsBeforeJoining")
                == [1_001, 0, 1_000, 1_000], "\(subscriber.describe())")

        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(stopped?.stderrText.contains("retained 1000 names") == true, "\(broker.describe())")
        #expect(stopped?.stderrText.contains("snapshots 1 (1000 notifications)") == true, "\(broker.describe())")
    }

    @Test("past --retain-names the values updated longest ago are evicted, counted and logged")
    func evictionAtTheBoundIsCounted() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker(["--retain-names", "100"])
        try await publishRetained(children, frontend: frontend, names: 150)
        #expect(await broker.waitForStderr(containing: "evicted"), "\(broker.describe())")

        let subscriber = try children.start(
            "subscriber",
            ["subscribe", "state.>", "--retained", "--connect", backend, "--format", "json", "--count", "100",
             "--timeout", "60"])
        let output = await subscriber.waitForExit(timeout: .seconds(60))
        expectExit(output, 0, subscriber)
        let names = subscriber.output.stdoutText.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["name"] as? String
        }
        // The last 100 names posted (k51...k150, updated last in the second round) are kept.
        #expect(Set(names) == Set((51...150).map { "state.k\($0)" }))

        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        // 300 retained posts of 150 names into 100 places: 50 evicted in the first round, and in
        // the second each of k1...k50 evicts the oldest of the others, and so on: 200 in all.
        #expect(stopped?.stderrText.contains("retained 100 names") == true, "\(broker.describe())")
        #expect(stopped?.stderrText.contains("evicted 200,") == true, "\(broker.describe())")
    }

    @Test("nbus subscribe --retained-only prints the current state and exits 0")
    func retainedOnlyPrintsTheStateAndExits() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker(["--retain-names", "100"])
        try await publishRetained(children, frontend: frontend, names: 5)
        let reader = try children.start(
            "reader", ["subscribe", "state.>", "--retained-only", "--connect", backend, "--format", "json", "--timeout", "30"])
        let output = await reader.waitForExit(timeout: .seconds(60))
        expectExit(output, 0, reader)
        let objects = reader.output.stdoutText.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 5, "\(reader.describe())")
        #expect(objects.allSatisfy { $0["retained"] as? Bool == true && $0["payload"] as? String == "v2" })
        #expect(summaryCounts(output?.stderrText, "subscribe", "printed", "lostUpstream") == [5, 0], "\(reader.describe())")
    }

    @Test(
        "examples/python/consumer.py --retained: a foreign consumer gets the kept values, marked, then the live one, no loss",
        .enabled(if: pythonWithZMQ != nil, "needs python3 with pyzmq"))
    func pythonConsumerGetsRetainedValues() async throws {
        let python = try #require(pythonWithZMQ)
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker(["--retain-names", "100"])
        try await publishRetained(children, frontend: frontend, names: 5)
        let consumer = try children.start(
            "consumer.py", command: python,
            ["python3", TypedPythonEndToEndTests.script("consumer.py"), "state.>", "--retained", "--connect", backend,
             "--format", "json", "--count", "6", "--timeout", "30"])
        #expect(await consumer.waitForStdoutLines(5, timeout: .seconds(60)), "\(consumer.describe())")
        let live = try children.start("live", ["publish", "state.k1", "now", "--connect", frontend, "--timeout", "30"])
        expectExit(await live.waitForExit(timeout: .seconds(60)), 0, live)
        let output = await consumer.waitForExit(timeout: .seconds(60))
        expectExit(output, 0, consumer)
        let objects = consumer.output.stdoutText.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 6, "\(consumer.describe())")
        #expect(objects.prefix(5).allSatisfy { $0["retained"] as? Bool == true && $0["payload"] as? String == "v2" })
        #expect(objects.last?["retained"] == nil && objects.last?["payload"] as? String == "now")
        #expect(output?.stderrText.contains("lost upstream 0") == true, "\(consumer.describe())")
    }
}
