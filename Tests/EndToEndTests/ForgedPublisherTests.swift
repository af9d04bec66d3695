#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NotificationBus
import Testing
import TestSupport
import ZeroMQ

// Issue 29, item 3: a frontend peer that speaks for another publisher. A raw ZeroMQ XPUB in this
// process (plaintext, or a listed CURVE key of its own) sends frames carrying a running `nbus
// publish`'s publisher id: a forged end-of-stream record with a final sequence of 1,000,000, a
// notification 100,000 sequences ahead, and sequences 1-50 again. Before the fix the subscriber
// counted some 3,000,000 false losses (the broker replayed the forged record at 1 s and 3 s) and
// a false gap of 99,999. Now the broker refuses every one (not forwarded, never replayed),
// counts them in its report, /metrics and /varz, and logs it.

/// Reads subscription messages from a raw XPUB until `done` says so or `timeout` passes.
private func readSubscriptions(
    _ xpub: Socket, timeout: Duration = standardWait, until done: ([[UInt8]]) -> Bool
) throws -> [[UInt8]] {
    try xpub.set(.receiveTimeout, .milliseconds(100))
    var seen: [[UInt8]] = []
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline, !done(seen) {
        do {
            seen.append(try xpub.receive())
        } catch {
            guard error.kind == .wouldBlock else { throw error }
        }
    }
    return seen
}

/// A raw XPUB connected to a CURVE broker's frontend with a listed key of its own (`keyPair`).
private func curveForger(_ context: Context, brokerKey: String, keyPair: CurveKeyPair, frontend: String) throws -> Socket {
    let forger = try context.socket(.xpub)
    do {
        try forger.set(.linger, .zero)
        try forger.set(.curveServerKey, try Z85.decode(brokerKey))
        try forger.set(.curvePublicKey, try Z85.decode(keyPair.publicKey))
        try forger.set(.curveSecretKey, try Z85.decode(keyPair.secretKey))
        try forger.connect(frontend)
    } catch {
        forger.close()  // an open socket would keep the context's termination waiting
        throw error
    }
    return forger
}

/// The frames a forger sends in `victim`'s name on `name`, after the victim's sequence `seen`:
/// an end-of-stream record saying the stream ended at 1,000,000, a notification 100,000 ahead,
/// and sequences 1-50 again.
private func forgedFrames(victim: UInt64, name: String, seen: Int) throws -> [[UInt8]] {
    let nameBytes = Array(name.utf8)
    var payload: [UInt8] = [UInt8(nameBytes.count)] + nameBytes
    payload += withUnsafeBytes(of: UInt64(1_000_000).bigEndian, Array.init)
    var frames = [
        try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName("_nbus.eos.\(String(format: "%016llx", victim))"), payload: payload,
                headers: ["final": "1"], sequence: 1, publisherID: victim, timestamp: 1))
    ]
    frames.append(
        try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName(name), payload: Array("forged-ahead".utf8), sequence: UInt64(seen + 100_000),
                publisherID: victim, timestamp: 1)))
    for sequence in 1...50 {
        frames.append(
            try EnvelopeCodec.encode(
                BusNotification(
                    name: NotificationName(name), payload: Array("forged-\(sequence)".utf8), sequence: UInt64(sequence),
                    publisherID: victim, timestamp: 1)))
    }
    return frames
}

@Suite("forged publisher ids at the broker (real processes, raw ZeroMQ forger)", .serialized, .timeLimit(.minutes(2)))
struct ForgedPublisherTests {
    /// Runs the scenario against a started broker; `forger` is a raw XPUB connected to its
    /// frontend (plaintext or CURVE), `publisherArguments` what makes the victim a client of it.
    private func forgeAgainst(
        _ children: Children, broker: Child, frontend: String, backend: String, forger: Socket,
        publisherArguments: [String] = [], subscriberArguments: [String] = []
    ) async throws {
        let name = "p3.x"
        let count = 300
        let subscriber = try children.start(
            "subscriber", ["subscribe", "p3.>", "--connect", backend, "--format", "json", "--timeout", "60"] + subscriberArguments)
        // The forger hears what the broker forwards to every publisher: the subscriber's prefix
        // and the end-of-stream subscription every NotificationBus subscriber holds.
        let wanted: Set<[UInt8]> = [[1] + Array("p3.".utf8), [1] + Array("_nbus.eos.".utf8)]
        let seen = try readSubscriptions(forger) { wanted.isSubset(of: Set($0)) }
        try #require(wanted.isSubset(of: Set(seen)), "the forger never saw the subscriptions:\n\(broker.describe())")
        // The victim: a paced publisher, 3 s of notifications, with its own end of stream.
        let victim = try children.start(
            "victim", ["publish", name, "v-{n}", "--count", "\(count)", "--rate", "100", "--connect", frontend, "--timeout", "30"]
                + publisherArguments)
        #expect(await subscriber.waitForStdoutLines(10, timeout: .seconds(30)), "\(subscriber.describe())")
        let first = try #require(parseJSONLines(subscriber.output.stdoutLines).notifications.first, "\(subscriber.describe())")
        let victimID = try #require(UInt64(first.publisherID, radix: 16), "publisherID \(first.publisherID)")
        for frame in try forgedFrames(victim: victimID, name: name, seen: 10) { try forger.send(frame) }
        // The forger's own id is its own: that one passes.
        try forger.send(
            try EnvelopeCodec.encode(
                BusNotification(name: NotificationName(name), payload: Array("forger-own".utf8), sequence: 1, publisherID: 0x5EED, timestamp: 1)))
        expectExit(await victim.waitForExit(timeout: .seconds(60)), 0, victim)
        // The broker replays end-of-stream records 1 and 3 s after they passed: the victim's own,
        // last of all, was replayed twice once its report says 2 replays (a forged record, sent
        // earlier, would have been replayed by then too).
        #expect(
            await broker.waitForStderr(containing: "end-of-stream replays 2", timeout: .seconds(30)), "\(broker.describe())")
        let summary = try #require(await stopSubscriber(subscriber), "\(subscriber.describe())")
        let received = parseJSONLines(subscriber.output.stdoutLines)
        let fromVictim = received.notifications.filter { $0.publisherID == first.publisherID }
        #expect(fromVictim.map(\.sequence) == Array(1...count), "the victim's stream, each once, in order:\n\(subscriber.describe())")
        #expect(!fromVictim.contains { $0.payload.hasPrefix("forged") }, "a forged notification was delivered")
        #expect(received.notifications.contains { $0.payload == "forger-own" }, "the forger's own notification did not pass")
        #expect(received.other.isEmpty, "gap lines: \(received.other.prefix(3))")
        #expect(
            summaryCounts(summary.stderrText, "subscribe", "printed", "lostUpstream") == [count + 1, 0],
            "false losses from a forged record:\n\(subscriber.describe())")
        // The broker said so, once, naming the id.
        let idText = String(format: "%016llx", victimID)
        #expect(
            broker.output.stderrText.contains("carrying publisher id \(idText), which its publisher on"),
            "\(broker.describe())")
    }

    @Test("plaintext: frames carrying another connection's publisher id are refused, counted and never replayed")
    func forgedFramesAreRefused() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker(["--stats", "0.5", "--http", "127.0.0.1:0"])
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")
        let port = try #require(monitoringPort(in: broker.output.stderrText), "\(broker.describe())")
        let context = try Context()
        defer { context.terminate() }
        let forger = try context.socket(.xpub)
        defer { forger.close() }
        try forger.set(.linger, .zero)
        try forger.connect(frontend)
        try await forgeAgainst(children, broker: broker, frontend: frontend, backend: backend, forger: forger)
        // Counted: 52 frames (the record, one ahead, 50 repeats) in /metrics, with its HELP, and /varz.
        let metrics = try httpGet(port: port, "/metrics").body
        #expect(metricValue(metrics, "nbus_broker_foreign_publisher_id_frames_total") == 52, "\(metrics)")
        #expect(metrics.contains("# HELP nbus_broker_foreign_publisher_id_frames_total "), "\(metrics)")
        let varz = try httpGet(port: port, "/varz").body
        #expect(varz.contains(#""foreignPublisherIDFrames":52"#) || varz.contains(#""foreignPublisherIDFrames" : 52"#), "\(varz)")
        if let promtool = OperationsTests.promtool {
            let checked = try await runTool(promtool, ["check", "metrics"], input: metrics)
            #expect(checked.status == 0, "promtool: \(checked.output)")
        }
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(
            stopped?.stderrText.contains("refused frames with another connection's publisher id 52") == true, "\(broker.describe())")
    }

    @Test("a publisher that drops a frozen broker and dials again keeps its id: nothing of it is refused")
    func redialledPublisherIsNotRefused() async throws {
        let children = try Children()
        defer { children.killAll() }
        // tcp: a publisher's --stall-limit watches tcp connections only.
        let broker = try children.start(
            "broker", ["broker", "--frontend", "tcp://127.0.0.1:*", "--backend", "tcp://127.0.0.1:*", "--stats", "0.5"])
        let banner = try #require(await broker.waitForStdoutLine(containing: "broker: frontend"), "\(broker.describe())")
        let words = banner.split(separator: " ").map(String.init)
        let frontend = try #require(words.firstIndex(of: "frontend").map { words[$0 + 1] }, "\(banner)")
        let backend = try #require(words.firstIndex(of: "backend").map { words[$0 + 1] }, "\(banner)")
        let count = 8_000
        let subscriber = try children.start(
            "subscriber", ["subscribe", "q.>", "--connect", backend, "--format", "json", "--timeout", "90"])
        let publisher = try children.start(
            "publisher",
            ["publish", "q.x", "q", "--size", "1000", "--count", "\(count)", "--rate", "1000", "--connect", frontend,
             "--stall-limit", "1", "--timeout", "30", "--http", "127.0.0.1:0", "--metrics-interval", "0.1"])
        #expect(await subscriber.waitForStdoutLines(100, timeout: .seconds(30)), "\(subscriber.describe())")
        try #require(await publisher.waitForStderr(containing: "monitoring on http://"), "\(publisher.describe())")
        let port = try #require(monitoringPort(in: publisher.output.stderrText), "\(publisher.describe())")
        broker.signal(SIGSTOP)
        await broker.waitUntilStoppedOrGone()
        // The publisher drops the broker once its window has been shut for 1 s, and dials again.
        let dropped = await eventually(timeout: .seconds(30)) { () -> Double? in
            guard let scrape = try? httpGet(port: port, "/metrics") else { return nil }
            let value = metricValue(scrape.body, "nbus_bus_unwanted_while_disconnected_total") ?? 0
            return value > 0 ? value : nil
        }
        broker.signal(SIGCONT)
        try #require(dropped != nil, "the publisher never dropped the frozen broker:\n\(publisher.describe())")
        expectExit(await publisher.waitForExit(timeout: .seconds(60)), 0, publisher)
        // The last notification came through the redialled connection, from the same publisher
        // (the subscriber acknowledged the end of stream, so it holds it; it prints it by its exit).
        _ = await stopSubscriber(subscriber)
        let received = parseJSONLines(subscriber.output.stdoutLines).notifications
        #expect(received.last?.sequence == count, "\(subscriber.describe())")
        #expect(Set(received.map(\.publisherID)).count == 1, "\(subscriber.describe())")
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(
            stopped?.stderrText.contains("refused frames with another connection's publisher id 0") == true, "\(broker.describe())")
    }

    @Test("CURVE: an id belongs to the key that used it first; another listed key cannot speak for it")
    func forgedFramesAreRefusedWithCurve() async throws {
        let children = try Children()
        defer { children.killAll() }
        let keys = try await TestKeys(children)
        // A second listed publisher key: the forger's, admitted like anyone on the list.
        let made = try #require(try await children.run("keygen eve", ["keygen", "--output", "pubs/eve"]))
        #expect(made.status == 0, "\(made.stderrText)")
        let eve = try CurveKeyFile.readKeyPair(at: "\(children.folder.path)/pubs/eve.key")
        let frontend = children.folder.ipc("f.sock")
        let backend = children.folder.ipc("b.sock")
        let broker = try children.start(
            "broker",
            ["broker", "--frontend", frontend, "--backend", backend, "--curve-secret", "broker.key",
             "--allow-publishers", "pubs", "--allow-subscribers", "subs", "--stats", "0.5"])
        try #require(await broker.waitForStderr(containing: "CURVE on"), "\(broker.describe())")
        let context = try Context()
        defer { context.terminate() }
        let forger = try curveForger(context, brokerKey: keys.broker, keyPair: eve, frontend: frontend)
        defer { forger.close() }
        try await forgeAgainst(
            children, broker: broker, frontend: frontend, backend: backend, forger: forger,
            publisherArguments: TestKeys.client("pubs/alice"), subscriberArguments: TestKeys.client("subs/bob"))
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(
            stopped?.stderrText.contains("refused frames with another connection's publisher id 52") == true, "\(broker.describe())")
        // The refusal names both keys: who forged and whose id it was.
        #expect(broker.output.stderrText.contains("key \(eve.publicKey) carrying publisher id"), "\(broker.describe())")
    }

    @Test("CURVE, after a broker restart: another listed key comes first with the victim's id, and is refused by the id's key tag")
    func forgedFramesAreRefusedAfterARestart() async throws {
        let children = try Children()
        defer { children.killAll() }
        let keys = try await TestKeys(children)
        let made = try #require(try await children.run("keygen eve", ["keygen", "--output", "pubs/eve"]))
        #expect(made.status == 0, "\(made.stderrText)")
        let eve = try CurveKeyFile.readKeyPair(at: "\(children.folder.path)/pubs/eve.key")
        let alice = try CurveKeyFile.readKeyPair(at: "\(children.folder.path)/pubs/alice.key")
        let frontend = children.folder.ipc("f.sock")
        let backend = children.folder.ipc("b.sock")
        let brokerArguments = [
            "broker", "--frontend", frontend, "--backend", backend, "--curve-secret", "broker.key",
            "--allow-publishers", "pubs", "--allow-subscribers", "subs", "--stats", "0.5",
        ]
        let first = try children.start("broker", brokerArguments)
        try #require(await first.waitForStderr(containing: "CURVE on"), "\(first.describe())")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "p5.>", "--connect", backend, "--format", "json", "--timeout", "90"] + TestKeys.client("subs/bob"))
        let victim = try children.start(
            "victim", ["publish", "p5.x", "v-{n}", "--count", "600", "--rate", "100", "--connect", frontend, "--timeout", "60"]
                + TestKeys.client("pubs/alice"))
        #expect(await subscriber.waitForStdoutLines(10, timeout: .seconds(30)), "\(subscriber.describe())")
        let seen = try #require(parseJSONLines(subscriber.output.stdoutLines).notifications.first, "\(subscriber.describe())")
        let victimID = try #require(UInt64(seen.publisherID, radix: 16), "publisherID \(seen.publisherID)")
        // NBP-1 §15.3: with CURVE the id's high 32 bits are the first four bytes of the key.
        #expect(PublisherKeyTag.tag(of: victimID) == PublisherKeyTag.tag(ofPublicKey: try Z85.decode(alice.publicKey)))
        // The victim is held still while its broker dies and comes back: the new broker has no
        // record of who owns what, and the forger is the first to speak.
        victim.signal(SIGSTOP)
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        let broker = try children.start("broker again", brokerArguments)
        try #require(await broker.waitForStderr(containing: "CURVE on"), "\(broker.describe())")
        let context = try Context()
        defer { context.terminate() }
        let forger = try curveForger(context, brokerKey: keys.broker, keyPair: eve, frontend: frontend)
        defer { forger.close() }
        let wanted: Set<[UInt8]> = [[1] + Array("p5.".utf8), [1] + Array("_nbus.eos.".utf8)]
        let subscriptions = try readSubscriptions(forger, timeout: .seconds(30)) { wanted.isSubset(of: Set($0)) }
        try #require(wanted.isSubset(of: Set(subscriptions)), "the forger never saw the subscriptions:\n\(broker.describe())")
        for frame in try forgedFrames(victim: victimID, name: "p5.x", seen: 10) { try forger.send(frame) }
        #expect(
            await broker.waitForStderr(containing: "refused frames with another connection's publisher id 52", timeout: .seconds(30)),
            "\(broker.describe())")
        victim.signal(SIGCONT)
        expectExit(await victim.waitForExit(timeout: .seconds(60)), 0, victim)
        let summary = try #require(await stopSubscriber(subscriber), "\(subscriber.describe())")
        let received = parseJSONLines(subscriber.output.stdoutLines)
        let fromVictim = received.notifications.filter { $0.publisherID == seen.publisherID }
        #expect(!fromVictim.contains { $0.payload.hasPrefix("forged") }, "a forged notification was delivered")
        #expect(Set(fromVictim.map(\.sequence)).count == fromVictim.count, "a notification twice")
        #expect(fromVictim.last?.sequence == 600, "the victim's stream did not reach its end:\n\(subscriber.describe())")
        // What the kill lost is counted (at most the whole stream); the forged record's 1,000,000
        // would have been counted as lost too.
        let counts = try #require(summaryCounts(summary.stderrText, "subscribe", "printed", "lostUpstream"), "\(subscriber.describe())")
        #expect(counts[0] + counts[1] == 600, "printed + lost must be the stream:\n\(subscriber.describe())")
        broker.signal(SIGTERM)
        expectExit(await broker.waitForExit(), 0, broker)
    }
}
