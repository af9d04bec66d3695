#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ToolSupport
import Testing

// Careless subscribers against `nbus broker` (issue 38, item 2): two pyzmq processes keep 100
// SUB sockets each that never read, each with a presence topic of its own, and replace 25 of them
// every 50 ms (1,000 connections coming and going a second). Each one that goes costs libzmq's
// XPUB a walk of every subscription it holds, on the forwarding thread, inside whatever call
// that thread is in; before, the walks outran the thread and it never came back (the broker
// exited stuck, 70, within seconds, and a steady subscriber printed nothing and counted nothing
// lost). Now the broker holds subscriber handshakes back while its loop lags (and to 200 a
// second), so there are never more departures than it can walk: with no supervisor, it stays up
// and a steady subscriber that keeps reading gets every notification, none lost. The same
// churners (`churnerScript`) as SubscriberChurnTests, at a fifth of its scale: still enough to
// kill the old broker on this machine at any load seen (200 peers).

@Suite("careless subscribers through the broker (real processes, pyzmq churners)", .serialized, .timeLimit(.minutes(4)))
struct CarelessSubscriberTests {
    @Test(
        "200 never-reading subscribers replaced 1,000 times a second: the broker stays up unsupervised and a steady subscriber loses nothing",
        .enabled(if: churnerPython != nil, "needs python3 with pyzmq"))
    func carelessChurnLosesNothing() async throws {
        let python = try #require(churnerPython)
        let children = try Children()
        defer { children.killAll() }
        let script = children.folder.path + "/churner.py"
        try churnerScript.write(toFile: script, atomically: true, encoding: .utf8)
        // A loop with no round for 3 s exits (70): the old broker did within seconds of the storm.
        let broker = try children.start(
            "broker", ["broker", "--frontend", "tcp://127.0.0.1:*", "--backend", "tcp://127.0.0.1:*", "--stuck-exit", "3", "--format", "json"])
        let banner = try #require(await broker.waitForStdoutLine(containing: "broker: frontend"), "\(broker.describe())")
        let words = banner.split(separator: " ").map(String.init)
        let frontend = try #require(words.firstIndex(of: "frontend").map { words[$0 + 1] }, "\(banner)")
        let backend = try #require(words.firstIndex(of: "backend").map { words[$0 + 1] }, "\(banner)")
        let total = 20_000
        let steady = try children.start(
            "steady", ["subscribe", "p38.x", "--connect", backend, "--format", "json", "--timeout", "200"])
        // The steady subscriber is in place before the storm: a probe of its own reaches it.
        let probe = try children.start("probe", ["publish", "p38.x", "probe", "--connect", frontend, "--timeout", "60"])
        #expect(
            await steady.waitForStdoutLine(containing: "\"payload\":\"probe\"", timeout: .seconds(60)) != nil,
            "\(steady.describe())")
        expectExit(await probe.waitForExit(timeout: .seconds(60)), 0, probe)
        let churners = try (1...2).map { index in
            try children.start(
                "churner\(index)", command: python, ["python3", script, backend, "p38.x", "100", "25", "0.05", "15"])
        }
        for churner in churners {
            #expect(await churner.waitForStdoutLine(containing: "ready", timeout: .seconds(60)) != nil, "\(churner.describe())")
        }
        // Published while the churn goes on (10 s at 2,000 a second; the churn lasts 15 s).
        let publisher = try children.start(
            "publisher",
            ["publish", "p38.x", "--count", "\(total)", "--rate", "2000", "--connect", frontend, "--timeout", "60",
             "--close-timeout", "60"])
        let published = await publisher.waitForExit(timeout: .seconds(150))
        expectExit(published, 0, publisher)
        #expect(
            await steady.wait(timeout: .seconds(60)) { output in
                output.stdoutTailLines().contains { $0.contains("\"sequence\":\(total),") } || output.terminated
            }, "\(steady.describe())\n\(broker.describe())")
        for churner in churners {
            expectExit(await churner.waitForExit(timeout: .seconds(60)), 0, churner)
        }
        // The broker never exited: no supervisor here.
        #expect(!broker.output.terminated, "\(broker.describe())")
        let steadyOutput = await stopSubscriber(steady)
        // The probe and all of the stream printed, nothing lost.
        #expect(
            summaryCounts(steadyOutput?.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally")
                == [total + 1, 0, 0], "\(steady.describe())")
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit(timeout: .seconds(30))
        expectExit(stopped, 0, broker)
        // The pacing is what held: handshakes were held back (1,000 a second came, 200 go).
        let held = stopped.flatMap { summaryCounts($0.stderrText, "broker", "subscriberHandshakesHeld") }?.first ?? 0
        #expect(held > 0, "\(broker.describe())")
        print("careless churn: broker held \(held) subscriber handshakes; steady printed \(total + 1), lost 0")
    }
}
