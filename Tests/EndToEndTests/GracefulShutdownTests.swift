#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// SIGINT/SIGTERM for the long-running commands: the first signal stops them in order (flush,
// report, exit 0), a second one during a slow shutdown exits at once. `subscribe` is covered by
// EndToEndTests.signalledSubscriber and the fault tests, which stop their subscribers this way.

@Suite("nbus graceful shutdown (real processes)", .serialized, .timeLimit(.minutes(3)))
struct GracefulShutdownTests {
    @Test("SIGTERM or SIGINT mid-stream: the publisher stops posting, flushes, reports and exits 0; nothing it posted is lost", arguments: [SIGTERM, SIGINT])
    func signalledPublisher(signal: Int32) async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("g.sock")
        let subscriber = try children.start("subscriber", ["subscribe", "g.>", "--connect", endpoint, "--format", "json"])
        let publisher = try children.start(
            "publisher",
            ["publish", "g.tick", "g-{n}", "--count", "100000", "--rate", "2000", "--bind", endpoint, "--timeout", "30"])
        try #require(await subscriber.waitForStdoutLines(100), "\(subscriber.describe())")

        publisher.signal(signal)
        let output = await publisher.waitForExit()
        expectExit(output, 0, publisher)
        let stderr = output?.stderrText ?? ""
        #expect(stderr.contains("nbus publish: stopping on signal"), "\(publisher.describe())")
        let summary = try Regex(#"posted (\d+), sent (\d+), unsent 0"#)
        let match = try #require(try summary.firstMatch(in: stderr), "no summary:\n\(publisher.describe())")
        let posted = Int(match.output[1].substring ?? "") ?? -1
        #expect(posted >= 100 && posted < 100_000)
        #expect(Int(match.output[2].substring ?? "") == posted)

        // Everything posted before the signal reached the subscriber (flushed, end of stream acknowledged).
        let subscribed = await stopSubscriber(subscriber)
        let parsed = parseJSONLines(subscriber.output.stdoutLines)
        #expect(parsed.other.isEmpty, "gap or unparsable lines: \(parsed.other.prefix(3))")
        expectStream(parsed.notifications, name: "g.tick", count: posted, payloadPrefix: "g", at: "subscriber")
        #expect(
            summaryCounts(subscribed?.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally") == [posted, 0, 0],
            "\(subscriber.describe())")
    }

    @Test("SIGTERM or SIGINT mid-stream: the broker stops and prints its counters, exit 0", arguments: [SIGTERM, SIGINT])
    func signalledBroker(signal: Int32) async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start("subscriber", ["subscribe", "b.>", "--connect", backend])
        let publisher = try children.start(
            "publisher", ["publish", "b.tick", "--count", "100000", "--rate", "2000", "--connect", frontend, "--timeout", "30"])
        try #require(await subscriber.waitForStdoutLines(50), "\(subscriber.describe())")

        broker.signal(signal)
        expectExit(await broker.waitForExit(), 0, broker)
        let stopped = broker.output.stderrText.split(separator: "\n").map(String.init).first { $0.contains("nbus broker: stopped:") }
        let counters = try Regex(#"from publishers \d+ msgs \(\d+ B, (\d+) notifications\)"#)
        let forwarded = try stopped.flatMap { try counters.firstMatch(in: $0) }.flatMap { Int($0.output[1].substring ?? "") }
        #expect((forwarded ?? 0) >= 50, "\(broker.describe())")
        publisher.signal(SIGKILL)
        subscriber.signal(SIGKILL)
    }

    @Test("SIGTERM while a stopped subscriber is behind: the broker hands on what it held before it closes (--drain)")
    func brokerDrainsOnStop() async throws {
        let children = try Children()
        defer { children.killAll() }
        // Reports its counters every 0.2 s, so the test sees when it has read every post.
        let (broker, frontend, backend) = try await children.startBroker(["--drain", "60", "--stats", "0.2"])
        let published = 20_000
        let subscriber = try children.start(
            "subscriber", ["subscribe", "d.>", "--connect", backend, "--count", "\(published)", "--timeout", "90"])
        let publisher = try children.start(
            "publisher",
            ["publish", "d.tick", "d-{n}", "--count", "\(published)", "--size", "1024", "--connect", frontend,
             "--timeout", "30", "--close-timeout", "1"])
        try #require(await subscriber.waitForStdoutLines(1), "\(subscriber.describe())")
        // Stopped, it reads nothing: what it has not taken waits in the broker (20 MB, within
        // its 64 MiB budget, so nobody is disconnected).
        subscriber.signal(SIGSTOP)
        let readAll = await broker.wait(timeout: .seconds(120)) { output in
            output.stderrText.matches(of: /stats: from publishers \d+ msgs \(\d+ B, (\d+) notifications\)/)
                .contains { Int($0.output.1) ?? 0 >= published }
        }
        try #require(readAll, "\(broker.describe())")
        broker.signal(SIGTERM)
        subscriber.signal(SIGCONT)
        expectExit(await broker.waitForExit(timeout: .seconds(90)), 0, broker)
        #expect(broker.output.stderrText.contains("everything held was handed on"), "\(broker.describe())")
        // Every notification reached it, through the broker that was stopping.
        expectExit(await subscriber.waitForExit(timeout: .seconds(90)), 0, subscriber)
        #expect(subscriber.output.stdoutLines.count == published, "\(subscriber.describe())")
        publisher.signal(SIGKILL)
    }

    @Test("A second signal during a slow shutdown exits at once (status 128 + signal)", arguments: [SIGTERM, SIGINT])
    func secondSignalExitsAtOnce(signal: Int32) async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("s.sock")
        let subscriber = try children.start("subscriber", ["subscribe", "s.>", "--connect", endpoint])
        // Closing waits up to 30 s for the subscriber to acknowledge the end of stream; the
        // subscriber is stopped (SIGSTOP), so the first signal starts a shutdown that would take that long.
        let publisher = try children.start(
            "publisher",
            ["publish", "s.tick", "--count", "100000", "--rate", "1000", "--bind", endpoint, "--timeout", "30",
             "--close-timeout", "30"])
        try #require(await subscriber.waitForStdoutLines(20), "\(subscriber.describe())")
        subscriber.signal(SIGSTOP)
        defer { subscriber.signal(SIGCONT) }
        // Stopped for real before the publisher closes: else it may still acknowledge the end of
        // stream, and the publisher's close ends at once instead of waiting for it.
        await subscriber.waitUntilStoppedOrGone()

        publisher.signal(signal)
        try #require(
            await publisher.waitForStderr(containing: "stopping on signal; closing (up to 30.0 s)"), "\(publisher.describe())")
        let clock = ContinuousClock()
        let secondSignalAt = clock.now
        publisher.signal(signal)
        let output = try #require(await publisher.waitForExit(timeout: .seconds(20)), "\(publisher.describe())")
        let took = clock.now - secondSignalAt
        #expect(!output.bySignal && output.status == 128 + signal, "\(publisher.describe())")
        #expect(output.stderrText.contains("second signal"), "\(publisher.describe())")
        #expect(took < .seconds(10), "took \(took) after the second signal")
    }

    @Test("An unpaced publisher whose posts never wait stops on the first SIGTERM, with its summary")
    func unpacedPublisherStopsOnFirstSignal() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("u.sock")
        // Bound and without back-pressure (the direct default), the I/O thread drains the queue
        // into ZeroMQ (which drops at the mark), so a post always finds room and never suspends.
        let subscriber = try children.start("subscriber", ["subscribe", "u.>", "--connect", endpoint])
        let publisher = try children.start(
            "publisher", ["publish", "u.tick", "--count", "100000000", "--bind", endpoint])
        try #require(await subscriber.waitForStdoutLines(1), "\(subscriber.describe())")
        publisher.signal(SIGTERM)
        let output = await publisher.waitForExit(timeout: .seconds(20))
        // Before the fix it ignored the first SIGTERM (and the second exited 143 with no summary).
        expectExit(output, 0, publisher)
        #expect(output?.stderrText.contains("stopping on signal") == true, "\(publisher.describe())")
        #expect(output?.stderrText.contains("nbus publish: posted ") == true, "\(publisher.describe())")
    }
}
