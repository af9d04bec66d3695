#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NotificationBus
import Synchronization
import Testing
import ZeroMQ

// Through `nbus broker` with defaults: nothing lost for a subscriber that keeps up on average,
// a stopped subscriber within its budget costs the others nothing and loses nothing, one past it
// is disconnected and counts its loss exactly while the others lose nothing,
// and the peers kit's client speaks the kit's interface. Real processes, ipc (tcp for the
// peer client, whose interface defaults to it).

@Suite("through the broker, with defaults (real processes)", .serialized, .timeLimit(.minutes(4)))
struct BrokeredLosslessTests {
    @Test("a fast publisher's 200,000 x 256 B burst: nbus subscribe prints every one (it lost most of it before)")
    func burstArrivesWhole() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker()
        let subscriber = try children.start(
            "subscriber", ["subscribe", "burst.x", "--connect", backend, "--count", "200000", "--timeout", "90"])
        let publisher = try children.start(
            "publisher", ["publish", "burst.x", "--count", "200000", "--size", "256", "--connect", frontend, "--timeout", "30"])
        let published = await publisher.waitForExit(timeout: .seconds(90))
        expectExit(published, 0, publisher)
        #expect(published?.stderrText.contains("posted 200000, sent 200000, unsent 0") == true, "\(publisher.describe())")
        let printed = await subscriber.waitForExit(timeout: .seconds(90))
        expectExit(printed, 0, subscriber)
        #expect(subscriber.output.completeStdoutLineCount == 200_000, "\(subscriber.describe())")
        #expect(printed?.stderrText.contains("lost upstream 0") == true, "\(subscriber.describe())")
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(stopped?.stderrText.contains("slow subscribers 0") == true, "\(broker.describe())")
    }

    @Test("within its budget, a subscriber stopped for 5 s from a 150,000 x 256 B burst's start costs nobody anything and loses nothing")
    func stoppedSubscriberWithinBudget() async throws {
        let children = try Children()
        defer { children.killAll() }
        // Within the budget in bytes whatever the batching: the mark is sized for small frames
        // (this burst once left in 34,374 frames of 1.2 KB, past the old 2 KiB-frame mark).
        try await stoppedSubscriberWithinBudgetBody(children)
    }

    private func stoppedSubscriberWithinBudgetBody(_ children: Children) async throws {
        let (broker, frontend, backend) = try await children.startBroker()
        let total = 150_000
        let healthy = try children.start(
            "healthy", ["subscribe", "feed.x", "--connect", backend, "--count", "\(total)", "--timeout", "90"])
        let stopped = try children.start(
            "stopped", ["subscribe", "feed.x", "--connect", backend, "--count", "\(total)", "--timeout", "90"])
        let publisher = try children.start(
            "publisher",
            ["publish", "feed.x", "--count", "\(total)", "--size", "256", "--connect", frontend, "--subscribers", "2",
             "--timeout", "30", "--close-timeout", "60"])
        #expect(await healthy.waitForStdoutLines(1), "\(healthy.describe())")
        stopped.signal(SIGSTOP)
        // The scenario's stop, not a wait for readiness: 5 s, whatever happens meanwhile.
        try await Task.sleep(for: .seconds(5))
        let brokerMemory = peakMemoryKilobytes(of: broker.pid)
        stopped.signal(SIGCONT)
        expectExit(await publisher.waitForExit(timeout: .seconds(60)), 0, publisher)
        for subscriber in [healthy, stopped] {
            let output = await subscriber.waitForExit(timeout: .seconds(80))
            expectExit(output, 0, subscriber)
            #expect(subscriber.output.completeStdoutLineCount == total, "\(subscriber.describe())")
            #expect(output?.stderrText.contains("printed \(total); lost upstream 0,") == true, "\(subscriber.describe())")
        }
        // Nobody waited for the stopped one: the broker never held a notification for room.
        let report = await stopBrokerForReport(broker)
        #expect(report.contains("waits for room 0,"), "\(broker.describe())")
        #expect(report.contains("slow subscribers 0 (sent past them 0)"), "\(broker.describe())")
        #expect(report.contains("stalled subscribers disconnected 0"), "\(broker.describe())")
        expectBrokerMemory(brokerMemory, subscribers: 2, budgetMiB: 64, published: total)
    }

    @Test("past its budget, a stopped subscriber is disconnected and counts its loss exactly; the other loses nothing")
    func stoppedSubscriberPastBudget() async throws {
        let children = try Children()
        defer { children.killAll() }
        // A budget of 8 MiB makes a 150,000 x 256 B burst (some 60 MiB in the broker) several times
        // larger than it, with output a test can read; the 1,000,000-notification case with the
        // default budget is in docs/benchmarks/latency-and-broker.md. On a loaded machine the healthy one may fall past
        // the budget too and throttle the publisher (flow control): its close waits for that.
        let (broker, frontend, backend) = try await children.startBroker(["--subscriber-budget", "8"])
        let total = 150_000
        let healthy = try children.start(
            "healthy", ["subscribe", "feed.x", "--connect", backend, "--count", "\(total)", "--timeout", "90"])
        let stopped = try children.start(
            "stopped", ["subscribe", "feed.x", "--connect", backend, "--timeout", "90", "--format", "json"])
        let publisher = try children.start(
            "publisher",
            ["publish", "feed.x", "--count", "\(total)", "--size", "256", "--connect", frontend, "--subscribers", "2",
             "--timeout", "30", "--close-timeout", "60"])
        #expect(await healthy.waitForStdoutLines(1), "\(healthy.describe())")
        stopped.signal(SIGSTOP)
        // The stopped one passes its budget only as fast as the healthy one lets the publisher
        // go on (flow control): beside `stress-ng --cpu 2` and a CI run, the disconnection came
        // after more than 30 s once (it did come: the report below counted it). 75 s is the
        // margin such a machine needs, not a target.
        #expect(
            await broker.waitForStderr(containing: "slow subscriber: disconnected subscriber", timeout: .seconds(75)),
            "\(broker.describe())")
        let brokerMemory = peakMemoryKilobytes(of: broker.pid)
        // The scenario's stop: resumed 5 s after it began (the disconnection came sooner).
        try await Task.sleep(for: .seconds(5))
        stopped.signal(SIGCONT)
        expectExit(await publisher.waitForExit(timeout: .seconds(60)), 0, publisher)
        let healthyOutput = await healthy.waitForExit(timeout: .seconds(80))
        expectExit(healthyOutput, 0, healthy)
        #expect(healthy.output.completeStdoutLineCount == total, "\(healthy.describe())")
        #expect(healthyOutput?.stderrText.contains("printed \(total); lost upstream 0,") == true, "\(healthy.describe())")
        // The resumed one reconnects and learns its tail from the last notifications or the
        // end-of-stream record (which the broker replays): wait until it reaches the last sequence.
        #expect(
            await stopped.wait(timeout: .seconds(60)) { output in
                let tail = output.stdoutTailLines()
                return tail.contains { $0.contains("\"sequence\":\(total),") }
                    || parseGapLines(tail).contains { $0.sequences.upperBound == total }
            }, "\(stopped.describe())")
        let stoppedOutput = await stopSubscriber(stopped)
        let lines = stoppedOutput?.stdoutLines ?? []
        let (_, lost) = expectExactAccounting(
            notifications: parseJSONLines(lines).notifications, gaps: parseGapLines(lines), published: total, at: "stopped")
        #expect(lost > 0, "the stopped subscriber lost nothing: it was not disconnected")
        let report = await stopBrokerForReport(broker)
        #expect(report.contains("stalled subscribers disconnected 1,"), "\(broker.describe())")
        // Nothing went past the healthy one: no slow episode.
        #expect(report.contains("slow subscribers 0 (sent past them 0)"), "\(broker.describe())")
        expectBrokerMemory(brokerMemory, subscribers: 2, budgetMiB: 8, published: total)
    }

    @Test("direct topology: a binding publisher's subscriber stopped for a whole 25,000-notification burst loses nothing; the other gets it all meanwhile")
    func stoppedSubscriberOfABindingPublisher() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = "ipc://\(children.folder.path)/direct.sock"
        // 25,000: within the mark however the posts are batched (30,840 frames for 64 MiB; one
        // notification a frame at worst, on a loaded machine), and past the old 10,000.
        let total = 25_000
        // The publisher holds what the stopped one has not taken: it must outlive the stop, so it
        // waits for both end-of-stream acknowledgements long enough.
        let publisher = try children.start(
            "publisher",
            ["publish", "feed.x", "--count", "\(total)", "--size", "256", "--bind", endpoint, "--subscribers", "2",
             "--timeout", "30", "--close-timeout", "60"])
        let healthy = try children.start(
            "healthy", ["subscribe", "feed.x", "--connect", endpoint, "--count", "\(total)", "--timeout", "90"])
        let stopped = try children.start(
            "stopped", ["subscribe", "feed.x", "--connect", endpoint, "--count", "\(total)", "--timeout", "90"])
        #expect(await healthy.waitForStdoutLines(1), "\(healthy.describe())")
        stopped.signal(SIGSTOP)
        // The healthy one gets everything while the other is stopped: nobody waited for it.
        #expect(
            await healthy.waitForStdoutLines(total, timeout: .seconds(60)),
            "\(healthy.describe())\n\(stopped.describe())\n\(publisher.describe())")
        stopped.signal(SIGCONT)
        for subscriber in [healthy, stopped] {
            let output = await subscriber.waitForExit(timeout: .seconds(80))
            expectExit(output, 0, subscriber)
            #expect(subscriber.output.completeStdoutLineCount == total, "\(subscriber.describe())")
            #expect(output?.stderrText.contains("printed \(total); lost upstream 0,") == true, "\(subscriber.describe())")
        }
        expectExit(await publisher.waitForExit(timeout: .seconds(60)), 0, publisher)
    }

    @Test("the broker sends a closed publisher's end-of-stream record again a second later, byte for byte")
    func endOfStreamRecordsAreReplayed() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let context = try Context()
        defer { context.terminate() }
        // A raw subscriber of every end-of-stream record, as every NotificationBus SUB is.
        let raw = try context.socket(.sub)
        defer { raw.close() }
        try raw.set(.linger, .zero)
        try raw.set(.receiveTimeout, .milliseconds(100))
        try raw.subscribe(ControlNames.endOfStreamPrefix)
        try raw.connect(backend)
        let subscriber = try children.start(
            "subscriber", ["subscribe", "replay.x", "--connect", backend, "--count", "3", "--timeout", "20"])
        let publisher = try children.start(
            "publisher", ["publish", "replay.x", "{n}", "--count", "3", "--connect", frontend, "--timeout", "20"])
        expectExit(await publisher.waitForExit(), 0, publisher)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
        // The record during the close, then the same bytes again about a second later (its
        // repeats during the close come within the close timeout; the replay comes after).
        var first: (bytes: [UInt8], at: ContinuousClock.Instant)?
        var replayedAfter: Duration?
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, replayedAfter == nil {
            guard let frame = try? raw.receive() else { continue }
            let now = ContinuousClock.now
            if let first {
                if frame == first.bytes, now - first.at >= .milliseconds(900) { replayedAfter = now - first.at }
            } else {
                first = (frame, now)
            }
        }
        #expect(first != nil, "no end-of-stream record reached a subscriber of _nbus.eos.")
        #expect(replayedAfter != nil, "the broker did not replay the record within 10 s")
    }

    @Test("nbus bench peer-client: the peers kit's modes, with their JSON lines")
    func peerClientModes() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (_, frontend, backend) = try await children.startBroker()
        let endpoints = ["--frontend=\(frontend)", "--backend=\(backend)"]
        let ready = children.folder.path + "/sub.ready"
        let subscriber = try children.start(
            "sub", ["bench", "peer-client", "--mode=sub", "--subject=bench.3", "--ready=\(ready)"] + endpoints)
        #expect(await subscriber.waitForStderr(containing: "peer-client: subscribed"), "\(subscriber.describe())")
        #expect(FileManager.default.fileExists(atPath: ready))
        // A second subscriber whose handler takes 50 us a notification (--work).
        let worker = try children.start(
            "sub --work", ["bench", "peer-client", "--mode=sub", "--subject=bench.3", "--work=0.00005"] + endpoints)
        #expect(await worker.waitForStderr(containing: "peer-client: subscribed"), "\(worker.describe())")
        let publisher = try children.start(
            "pub",
            ["bench", "peer-client", "--mode=pub", "--n=20000", "--size=256", "--subject=bench.0,bench.1,bench.2,bench.3",
             "--end-subject=bench.3"] + endpoints)
        let published = await publisher.waitForExit(timeout: .seconds(60))
        expectExit(published, 0, publisher)
        let subscribed = await subscriber.waitForExit(timeout: .seconds(60))
        expectExit(subscribed, 0, subscriber)
        func lastJSON(_ output: ChildOutput?) -> [String: Any] {
            guard let line = output?.stdoutLines.last(where: { $0.hasPrefix("{") }),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { return [:] }
            return object
        }
        let sub = lastJSON(subscribed)
        #expect(sub["role"] as? String == "sub")
        #expect((sub["received"] as? NSNumber)?.intValue == 5_000, "\(sub)")
        #expect(sub["end_marker"] as? Bool == true, "\(sub)")
        #expect((sub["lost_upstream"] as? NSNumber)?.intValue == 0, "\(sub)")
        // The worker gets the same, no faster than its handler allows (one per 50 us).
        let worked = lastJSON(await worker.waitForExit(timeout: .seconds(60)))
        #expect((worked["received"] as? NSNumber)?.intValue == 5_000, "\(worked)")
        #expect(worked["end_marker"] as? Bool == true && (worked["lost_upstream"] as? NSNumber)?.intValue == 0, "\(worked)")
        let workedRate = (worked["rate"] as? NSNumber)?.doubleValue ?? 0
        #expect(workedRate > 0 && workedRate <= 20_100, "--work=0.00005 allows 20,000 a second at most: \(worked)")
        let pub = lastJSON(published)
        #expect(pub["role"] as? String == "pub")
        #expect((pub["n"] as? NSNumber)?.intValue == 20_000, "\(pub)")
        for key in ["start_ns", "publish_done_ns", "flush_done_ns", "rate"] { #expect(pub[key] != nil, "\(key) in \(pub)") }

        let pongReady = children.folder.path + "/pong.ready"
        // The ponger's loop in a plain task on the global pool (--loop plain), the pinger's on the
        // bus's executor (the default): both answer every round trip.
        let pong = try children.start(
            "pong", ["bench", "peer-client", "--mode=pong", "--loop=plain", "--ready=\(pongReady)"] + endpoints)
        #expect(await pong.waitForStderr(containing: "peer-client: subscribed"), "\(pong.describe())")
        #expect(FileManager.default.fileExists(atPath: pongReady))
        let dump = children.folder.path + "/rtt.txt"
        let ping = try children.start(
            "ping", ["bench", "peer-client", "--mode=ping", "--n=300", "--warmup=20", "--size=16", "--dump=\(dump)"] + endpoints)
        let pinged = await ping.waitForExit(timeout: .seconds(60))
        expectExit(pinged, 0, ping)
        expectExit(await pong.waitForExit(timeout: .seconds(30)), 0, pong)
        let result = lastJSON(pinged)
        #expect(result["role"] as? String == "ping")
        #expect((result["n"] as? NSNumber)?.intValue == 300, "\(result)")
        let p50 = (result["p50_us"] as? NSNumber)?.doubleValue ?? 0
        let p99 = (result["p99_us"] as? NSNumber)?.doubleValue ?? 0
        #expect(p50 > 0 && p50 <= p99, "\(result)")
        let dumped = (try? String(contentsOfFile: dump, encoding: .utf8))?.split(separator: "\n") ?? []
        #expect(dumped.count == 300 && dumped.allSatisfy { UInt64($0) != nil })

        // A bad flag is a usage error.
        let bad = try await children.run("bad", ["bench", "peer-client", "--mode=sub", "--n=0"])
        #expect(bad?.status == 64, "\(String(describing: bad?.stderrText))")
        let workingPublisher = try await children.run("bad --work", ["bench", "peer-client", "--mode=pub", "--work=0.001"])
        #expect(workingPublisher?.status == 64, "\(String(describing: workingPublisher?.stderrText))")
        #expect(workingPublisher?.stderrText.contains("only with --mode sub") == true, "\(String(describing: workingPublisher?.stderrText))")
        let plainPublisher = try await children.run("bad --loop", ["bench", "peer-client", "--mode=pub", "--loop=plain"])
        #expect(plainPublisher?.status == 64, "\(String(describing: plainPublisher?.stderrText))")
    }
}

/// Stops the broker with SIGTERM, expects it to exit 0, and returns its stop report (stderr).
private func stopBrokerForReport(_ broker: Child, sourceLocation: SourceLocation = #_sourceLocation) async -> String {
    broker.signal(SIGTERM)
    let output = await broker.waitForExit()
    expectExit(output, 0, broker, sourceLocation: sourceLocation)
    return output?.stderrText ?? ""
}

/// The bound docs/deployment.md gives the broker's resident memory: idle (under 64 MiB here) +
/// per subscriber behind, twice its budget (full batches; the mark assumes 2 KiB frames) + per
/// publisher, --hwm × (frame + libzmq's 128 B): with 32 KiB batch frames that is more than the
/// whole stream, so the publisher's term is what it `published` (about 300 B a notification and
/// 128 B a message, counted as one message each: an upper bound).
private func expectBrokerMemory(
    _ kilobytes: Int?, subscribers: Int, budgetMiB: Int, published: Int, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let kilobytes else { return }
    let publisherTerm = min(published * 430, 10_000 * (32 * 1_024 + 128)) / 1_024
    let bound = 64 * 1_024 + subscribers * 2 * budgetMiB * 1_024 + publisherTerm
    #expect(kilobytes < bound, "broker peak RSS \(kilobytes) kB, bound \(bound) kB", sourceLocation: sourceLocation)
}

/// Two threads that spin until stopped: both cores busy, as `stress-ng --cpu 2` would keep them,
/// but ended for certain with the test (stress-ng's workers outlived their parent when it was
/// killed, and kept both cores busy for hours).
private final class CPULoad: Sendable {
    private let stopped = Atomic<Bool>(false)

    init(threads: Int) {
        for _ in 0..<threads {
            Thread.detachNewThread { [self] in
                var spins: UInt64 = 0
                while !stopped.load(ordering: .relaxed) { spins &+= 1 }
                withExtendedLifetime(spins) {}
            }
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}

// The defaults on a busy machine, as a user's often is: both cores kept busy while the burst goes
// through.
@Suite("through the broker, with defaults, on a loaded machine (real processes)", .serialized, .timeLimit(.minutes(10)))
struct BrokeredLoadedMachineTests {
    @Test("with both cores busy, a 200,000 x 256 B burst: nbus subscribe prints every one, 5 runs of 5")
    func burstArrivesWholeOnABusyMachine() async throws {
        let children = try Children()
        defer { children.killAll() }
        let load = CPULoad(threads: 2)
        defer { load.stop() }
        let total = 200_000
        for run in 1...5 {
            let (broker, frontend, backend) = try await children.startBroker()
            let subscriber = try children.start(
                "subscriber \(run)", ["subscribe", "burst.x", "--connect", backend, "--count", "\(total)", "--timeout", "100"])
            let publisher = try children.start(
                "publisher \(run)",
                ["publish", "burst.x", "--count", "\(total)", "--size", "256", "--connect", frontend, "--timeout", "60"])
            let published = await publisher.waitForExit(timeout: .seconds(100))
            expectExit(published, 0, publisher)
            let printed = await subscriber.waitForExit(timeout: .seconds(100))
            expectExit(printed, 0, subscriber)
            #expect(subscriber.output.completeStdoutLineCount == total, "run \(run): \(subscriber.describe())")
            #expect(printed?.stderrText.contains("lost upstream 0") == true, "run \(run): \(subscriber.describe())")
            broker.signal(SIGTERM)
            let stopped = await broker.waitForExit()
            expectExit(stopped, 0, broker)
            #expect(stopped?.stderrText.contains("slow subscribers 0 (sent past them 0)") == true, "run \(run): \(broker.describe())")
        }
    }
}

