#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ToolSupport
import Testing

// Subscriber churn against `nbus broker` (issue 29, item 1): two pyzmq processes keep 500 SUB
// sockets each, subscribed to the stream and to a presence topic of their own and never reading,
// and replace 25 of them every 100 ms, while a publisher sends at 5,000/s. Each departure makes
// libzmq walk every subscription the broker's backend holds, on the forwarding thread, inside
// whatever call it is in: the loop stayed there for the whole storm and after, and a steady
// subscriber got a fraction of the stream with "lost upstream 0". Now the broker exits (status
// 70) when its loop is stuck, a supervisor (this test) restarts it, and the steady subscriber
// accounts for every notification: delivered, counted lost, or, for the head of the stream before
// the first one it saw, counted in its summary (`notificationsBeforeJoining`). Real processes on 127.0.0.1.

/// A python3 that imports zmq, or nil (the test is then skipped).
let churnerPython: URL? = {
    guard let probe = try? SpawnedProcess.run("/usr/bin/env", ["python3", "-c", "import zmq"]) else { return nil }
    return probe.status == 0 ? URL(fileURLWithPath: "/usr/bin/env") : nil
}()

/// The churner: N SUB sockets (receive mark 100, linger 0) subscribed to `NAME\0` and a presence
/// topic of their own, never read; K of them replaced every PERIOD seconds for SECONDS. Prints
/// "ready" once all are made, "churned C" at the end.
let churnerScript = """
    import os, sys, time, zmq
    endpoint, name = sys.argv[1], sys.argv[2]
    n, k, period, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    ctx = zmq.Context(io_threads=1)
    def make():
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.RCVHWM, 100)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SUBSCRIBE, name.encode() + b"\\0")
        s.setsockopt(zmq.SUBSCRIBE, b"\\0nbus.presence." + os.urandom(8).hex().encode() + b"." + name.encode())
        s.connect(endpoint)
        return s
    socks = [make() for _ in range(n)]
    print("ready", flush=True)
    end = time.monotonic() + seconds
    i = cycles = 0
    while time.monotonic() < end:
        for _ in range(k):
            socks[i].close(0)
            socks[i] = make()
            i = (i + 1) % n
        cycles += 1
        time.sleep(period)
    print("churned", cycles, flush=True)
    for s in socks:
        s.close(0)
    ctx.term()
    """

@Suite("subscriber churn through the broker (real processes, pyzmq churners)", .serialized, .timeLimit(.minutes(4)))
struct SubscriberChurnTests {
    @Test(
        "1,000 never-reading subscribers replacing 500 a second: the broker never stays stuck, and a steady subscriber accounts for all 50,000",
        .enabled(if: churnerPython != nil, "needs python3 with pyzmq"))
    func churnStorm() async throws {
        let python = try #require(churnerPython)
        let children = try Children()
        defer { children.killAll() }
        let script = children.folder.path + "/churner.py"
        try churnerScript.write(toFile: script, atomically: true, encoding: .utf8)
        // A stuck loop exits after 3 s: the storm below kept the old broker stuck for over 20 s.
        let brokerArguments = ["--stuck-exit", "3"]
        var broker = try children.start(
            "broker", ["broker", "--frontend", "tcp://127.0.0.1:*", "--backend", "tcp://127.0.0.1:*"] + brokerArguments)
        let banner = try #require(await broker.waitForStdoutLine(containing: "broker: frontend"), "\(broker.describe())")
        // "broker: frontend tcp://127.0.0.1:P backend tcp://127.0.0.1:Q": the supervisor restarts it on the same ports.
        let words = banner.split(separator: " ").map(String.init)
        let frontend = try #require(words.firstIndex(of: "frontend").map { words[$0 + 1] }, "\(banner)")
        let backend = try #require(words.firstIndex(of: "backend").map { words[$0 + 1] }, "\(banner)")
        let total = 50_000
        let steady = try children.start(
            "steady", ["subscribe", "p11.x", "--connect", backend, "--format", "json", "--timeout", "200"])
        // The steady subscriber is in place at the broker before the storm (else the stream's head
        // would be a late join of its own making): a probe, a stream of its own left out of the
        // accounting, reaches it.
        let probe = try children.start("probe", ["publish", "p11.x", "probe", "--connect", frontend, "--timeout", "60"])
        let probeLine = try #require(
            await steady.waitForStdoutLine(containing: "\"payload\":\"probe\"", timeout: .seconds(60)), "\(steady.describe())")
        let probeID = try #require(parseJSONLines([probeLine]).notifications.first?.publisherID, "\(probeLine)")
        expectExit(await probe.waitForExit(timeout: .seconds(60)), 0, probe)
        let churners = try (1...2).map { index in
            try children.start(
                "churner\(index)", command: python, ["python3", script, backend, "p11.x", "500", "25", "0.1", "12"])
        }
        for churner in churners {
            #expect(await churner.waitForStdoutLine(containing: "ready", timeout: .seconds(60)) != nil, "\(churner.describe())")
        }
        // The close waits for the steady subscriber's acknowledgement of the end of stream through
        // restarts of the broker; the churners' presence goes when they stop.
        let publisherStart = wallClockNanoseconds()
        let publisher = try children.start(
            "publisher",
            ["publish", "p11.x", "--count", "\(total)", "--rate", "5000", "--connect", frontend, "--timeout", "60",
             "--close-timeout", "60"])
        // The supervisor: a broker that exits stuck (70) is started again on the same endpoints;
        // any other exit fails the test.
        var restarts = 0
        // When each broker exited stuck, in ms after the publisher started (for the diagnostics below).
        var stuckExits: [Int] = []
        let deadline = ContinuousClock.now + .seconds(150)
        while !publisher.output.finished, ContinuousClock.now < deadline {
            guard let exited = await broker.waitForExit(timeout: .milliseconds(500)) else { continue }
            expectExit(exited, 70, broker)
            #expect(exited.stderrText.contains("the forwarding loop has not run for"), "\(broker.describe())")
            guard exited.status == 70, restarts < 20 else { break }
            stuckExits.append(Int((wallClockNanoseconds() &- publisherStart) / 1_000_000))
            restarts += 1
            broker = try children.start(
                "broker\(restarts)", ["broker", "--frontend", frontend, "--backend", backend] + brokerArguments)
            #expect(await broker.waitForStdoutLine(containing: "broker: frontend") != nil, "\(broker.describe())")
        }
        let published = await publisher.waitForExit(timeout: .seconds(10))
        expectExit(published, 0, publisher)
        // Every notification is accounted for: the last one arrived, or a gap reaching it was counted.
        #expect(
            await steady.wait(timeout: .seconds(60)) { output in
                let tail = output.stdoutTailLines()
                return tail.contains { $0.contains("\"sequence\":\(total),") }
                    || parseGapLines(tail).contains { $0.sequences.upperBound == total }
            }, "\(steady.describe())\n\(broker.describe())\nrestarts \(restarts)")
        let steadyOutput = await stopSubscriber(steady)
        let lines = steadyOutput?.stdoutLines ?? []
        // Issue 29, item 1: in 2 runs of 5 (and once more later) the steady subscriber ended with
        // 17,220, 112 and 17,758 notifications neither delivered nor in a gap line. The head of the
        // stream: when the first broker is stuck from the publisher's first post (the churn starts
        // before the publisher), what it sent died with that broker (17,220 at 5,000/s is the 3 s
        // of --stuck-exit and the restart); or a churner's subscription reached a restarted broker
        // before the steady one's and started the publisher (112). By NBP-1 §8 the first
        // notification seen starts a stream (a late join looks the same), so no gap line can
        // hold that head: the subscriber's summary counts it (`notificationsBeforeJoining`, reproduced
        // deterministically by StreamHeadTests). Seen in 8 of 22 runs on a loaded machine (4 of 15
        // with the probe above), 3 to 37,943 long, its first notification always right after a
        // broker's stuck exit; in none was anything else missing. Exact: each of 1...total
        // delivered, in one gap line, or before the first one seen, and nothing else.
        let notifications = parseJSONLines(lines).notifications.filter { $0.publisherID != probeID }
        let gapLines = parseGapLines(lines).filter { $0.publisherID != probeID }
        let firstSequence = notifications.first?.sequence ?? 1
        #expect(
            summaryCounts(steadyOutput?.stderrText, "subscribe", "streamsJoinedLate", "notificationsBeforeJoining")
                == (firstSequence > 1 ? [1, firstSequence - 1] : [0, 0]),
            "first sequence \(firstSequence): \(steady.describe())")
        // The head, checked like a gap: a range no notification or gap line may overlap.
        let head = notifications.first.flatMap { first in
            first.sequence > 1
                ? ReceivedGap(
                    cause: "lostUpstream", count: first.sequence - 1, name: first.name, publisherID: first.publisherID,
                    sequences: 1...(first.sequence - 1)) : nil
        }
        let counted = expectExactAccounting(
            notifications: notifications, gaps: gapLines + (head.map { [$0] } ?? []), published: total, at: "steady")
        let (delivered, lost) = (counted.delivered, counted.lost - (firstSequence - 1))
        let gaps = gapLines.map { "\($0.cause) \($0.sequences)" }
        // When the steady subscriber's first line came (ms after the publisher started), against the
        // brokers' stuck exits: a head before the first exit is what died with the first broker.
        let firstIndex = lines.firstIndex { $0.contains("\"sequence\":\(firstSequence),") && !$0.contains(probeID) }
        let firstArrival = firstIndex.flatMap { index in
            steadyOutput?.stdoutLineArrivals.dropFirst(index).first.map { Int(($0 &- publisherStart) / 1_000_000) }
        }
        print(
            "churn storm: \(delivered) delivered, \(lost) counted lost, \(firstSequence - 1) before joining (first "
                + "sequence \(firstSequence) at \(firstArrival ?? -1) ms), broker restarts \(restarts) (stuck exits at "
                + "\(stuckExits) ms); gaps \(gaps.prefix(40))")
        if delivered + lost + firstSequence - 1 != total {
            var covered = Set(notifications.map(\.sequence))
            for gap in gapLines { covered.formUnion(gap.sequences) }
            var missing: [ClosedRange<Int>] = []
            for sequence in 1...total where !covered.contains(sequence) {
                if let last = missing.last, last.upperBound == sequence - 1 {
                    missing[missing.count - 1] = last.lowerBound...sequence
                } else {
                    missing.append(sequence...sequence)
                }
            }
            print(
                "churn storm, missing (neither delivered nor in a gap): \(missing.prefix(20)); steady's summary: "
                    + "\(steadyOutput?.stderrText.split(separator: "\n").last ?? "none"); publisher: "
                    + "\(publisher.output.stderrText.split(separator: "\n").suffix(2).joined(separator: " | "))")
        }
        for churner in churners { _ = await churner.waitForExit(timeout: .seconds(30)) }
        // The last broker stops in order.
        broker.signal(SIGTERM)
        expectExit(await broker.waitForExit(timeout: .seconds(30)), 0, broker)
    }
}

// The churn test's uncounted head, deterministically (issue 29, item 1): a subscriber whose
// subscription is away when a stream starts (its broker restarted; it comes back after the stream
// began) first sees the stream past sequence 1. NBP-1 §8 counts no loss there (a late join looks
// the same), so no gap line can hold the head; it used to go unsaid. Real processes over ipc.
@Suite("a stream's head that never reached a subscriber (real processes)", .serialized, .timeLimit(.minutes(1)))
struct StreamHeadTests {
    @Test("subscribed, then away while its broker restarts and another subscriber starts the stream: the head it never saw is counted in its summary")
    func headBeforeFirstSeen() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (first, frontend, backend) = try await children.startBroker()
        let steady = try children.start("steady", ["subscribe", "head.>", "--connect", backend, "--format", "json"])
        // A probe reaching it shows its subscription is in place at the first broker.
        let probe = try children.start("probe", ["publish", "head.probe", "p", "--connect", frontend, "--timeout", "30"])
        try #require(await steady.waitForStdoutLine(containing: "head.probe") != nil, "\(steady.describe())")
        expectExit(await probe.waitForExit(), 0, probe)
        // Stopped, it cannot reconnect: the restarted broker learns of it only once it resumes.
        steady.signal(SIGSTOP)
        await steady.waitUntilStoppedOrGone()
        first.signal(SIGKILL)
        _ = try #require(await first.waitForExit(), "\(first.describe())")
        let (second, _, _) = try await children.startBroker()
        let other = try children.start("other", ["subscribe", "head.x", "--connect", backend, "--format", "json"])
        let total = 3_000
        let publisher = try children.start(
            "publisher",
            ["publish", "head.x", "--count", "\(total)", "--rate", "1000", "--connect", frontend, "--timeout", "30",
             "--close-timeout", "30"])
        // The stream began without the steady subscriber (the other one started the publisher).
        try #require(await other.waitForStdoutLines(200), "\(other.describe())")
        steady.signal(SIGCONT)
        expectExit(await publisher.waitForExit(timeout: .seconds(40)), 0, publisher)
        let steadyOutput = await stopSubscriber(steady)
        let otherOutput = await stopSubscriber(other)
        let lines = (steadyOutput?.stdoutLines ?? []).filter { $0.contains("\"head.x\"") }
        let notifications = parseJSONLines(lines).notifications
        let gaps = parseGapLines(lines)
        let firstSequence = try #require(notifications.first?.sequence, "\(steady.describe())")
        try #require(firstSequence > 1, "the steady subscriber saw the stream begin: \(steady.describe())")
        #expect(firstSequence > 200, "the steady subscriber was away for the first 200")
        // Before the fix the head was in no gap and no counter: nothing said 1...firstSequence-1 was never seen.
        #expect(
            summaryCounts(steadyOutput?.stderrText, "subscribe", "streamsJoinedLate", "notificationsBeforeJoining", "lostUpstream")
                == [1, firstSequence - 1, gaps.reduce(0) { $0 + $1.count }], "\(steady.describe())")
        // Every notification of the stream: delivered, in a gap line, or before the first seen.
        let head = ReceivedGap(
            cause: "lostUpstream", count: firstSequence - 1, name: "head.x", publisherID: notifications[0].publisherID,
            sequences: 1...(firstSequence - 1))
        expectExactAccounting(notifications: notifications, gaps: gaps + [head], published: total, at: "steady")
        // The subscriber that saw the stream begin joined nothing late (the probe's stream is not its).
        let otherLines = otherOutput?.stdoutLines ?? []
        expectExactAccounting(
            notifications: parseJSONLines(otherLines).notifications, gaps: parseGapLines(otherLines), published: total, at: "other")
        #expect(summaryCounts(otherOutput?.stderrText, "subscribe", "streamsJoinedLate", "notificationsBeforeJoining") == [0, 0])
        second.signal(SIGTERM)
        expectExit(await second.waitForExit(), 0, second)
    }
}
