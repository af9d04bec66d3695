#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// Many machines on one: `nbus broker`, two `nbus publish` and two `nbus subscribe` processes, each
// in its own network namespace ("host"), joined by veth pairs to a Linux bridge, talking TCP over
// 10.77.0.0/24 (see VirtualNetwork.swift). The same guarantees as on loopback must hold across the
// virtual wires: each publisher's sequence numbers 1...N exactly once and in order at every
// matching subscriber, nothing lost upstream or dropped locally, and each pattern selecting
// exactly its names. Then one link is impaired with netem (delay and loss): TCP hides the loss, so
// delivery stays exact, and the delay shows in the observed latency.
//
// Needs root; skipped with a message otherwise, or where namespaces cannot be created (a
// container), unless NBUS_REQUIRE_NETNS=1 makes that a failure. `swift test --filter MultiHost`.
//
//   switch namespace: br0 ── broker 10.77.0.1   (frontend :5550, backend :5551)
//                        ├── pub1   10.77.0.11  orders.created.eu  -> sub1, sub2
//                        ├── pub2   10.77.0.12  orders.shipped.us  -> sub1 (sub2 filters it out)
//                        ├── sub1   10.77.0.21  orders.>
//                        └── sub2   10.77.0.22  orders.*.eu

@Suite(
    "nbus across hosts (network namespaces, veth, bridge, tcp)", .serialized, .timeLimit(.minutes(1)),
    .enabled(
        if: VirtualNetwork.mayBeAvailable || VirtualNetwork.required,
        "needs root and iproute2 (ip) to create network namespaces; CI runs as root"))
struct MultiHostTests {
    @Test("two publishers and two subscribers on five hosts over TCP: exactly once, in order, only matching names")
    func starOverTCP() async throws {
        guard let network = try await networkOrSkip() else { return }
        defer { network.destroy() }
        let children = try Children()
        defer { children.killAll() }  // runs first: processes die, then their namespaces go

        let star = try #require(try await Star.run(network, children, count: 500, rate: nil))
        for stream in star.streams { print("multi-host: \(stream.report)") }
        print("multi-host: filtered out at sub2 (orders.shipped.us under prefix orders.): \(star.sub2FilteredOut)")
    }

    @Test("an impaired link (netem delay 20 ms, loss 1%): TCP hides the loss, delivery stays exact, the delay shows")
    func impairedLink() async throws {
        guard let network = try await networkOrSkip() else { return }
        defer { network.destroy() }
        let children = try Children()
        defer { children.killAll() }

        let netem = ["delay", "20ms", "loss", "1%"]
        // pub2's link only: both directions (its eth0 and its bridge port). pub1's stays clean.
        let star = try await Star.run(
            network, children, count: 200, rate: 100,
            beforeStart: {
                if let reason = try await network.impair("pub2", netem: netem) {
                    try skip("impaired link: \(reason)")
                    return false
                }
                return true
            })
        guard let star else { return }

        let impaired = try #require(star.streams.first { $0.subscriber == "sub1" && $0.name == "orders.shipped.us" })
        let clean = try #require(star.streams.first { $0.subscriber == "sub1" && $0.name == "orders.created.eu" })
        // Every packet from pub2 waits 20 ms in netem before it leaves pub2, so no notification can
        // arrive sooner; 1 ms of slack for clock granularity.
        #expect(impaired.latency.min >= 19, "netem's delay is not visible: \(impaired.report)")
        let retransmitted = try await network.tcpRetransmissions(on: "pub2")
        let retransmittedTowardPub2 = try await network.tcpRetransmissions(on: "broker")
        print("multi-host: impaired link pub2 <-> switch: netem \(netem.joined(separator: " ")) both ways")
        print("multi-host: \(impaired.report)   <- impaired link")
        print("multi-host: \(clean.report)   <- clean link")
        print(
            "multi-host: TCP segments retransmitted (loss hidden by TCP): pub2 \(retransmitted.map(String.init) ?? "?"), "
                + "broker \(retransmittedTowardPub2.map(String.init) ?? "?")")
    }

    @Test("a subscriber host cut off the network (no RST, no reply) is dropped by the broker's TCP keepalive within seconds")
    func silentHostDropped() async throws {
        guard let network = try await networkOrSkip() else { return }
        defer { network.destroy() }
        let children = try Children()
        defer { children.killAll() }
        try await network.addHost("broker", address: "10.77.0.1")
        try await network.addHost("sub1", address: "10.77.0.21")

        // Keepalive after 1 s idle, then 3 probes 1 s apart: a dead peer goes after about 4 s.
        // Without keepalive the kernel would keep an idle connection to a vanished host for ever.
        let broker = try startNbus(
            network, children, "broker", on: "broker",
            ["broker", "--frontend", Star.frontend, "--backend", Star.backend, "--heartbeat", "1", "--log-level", "debug", "--stats", "0.1"])
        try #require(await broker.waitForStdoutLine(containing: "broker: frontend") != nil, "\(broker.describe())")
        _ = try startNbus(network, children, "sub1", on: "sub1", ["subscribe", "t.>", "--connect", Star.backend, "--timeout", "60"])
        try #require(
            await broker.waitForStderr(containing: "subscriber connected on \(Star.backend) from 10.77.0.21"),
            "the broker did not log the subscriber's connection:\n\(broker.describe())")
        // Keepalive probes only an idle connection: cut while the broker's side of the handshake
        // is unacknowledged, the kernel retransmits for minutes instead (it failed so when the
        // cut came right after the accept, on a busy machine). The subscription read by the
        // broker carries the acknowledgement of everything the broker sent before it.
        try #require(
            await broker.wait { $0.stderrText.contains(#/subscription messages [1-9]/#) },
            "the broker did not report the subscription:\n\(broker.describe())")

        try await network.cut("sub1")
        let cut = ContinuousClock.now
        #expect(
            await broker.waitForStderr(containing: "subscriber disconnected from \(Star.backend) from 10.77.0.21", timeout: .seconds(20)),
            "the broker kept a connection to a host that vanished:\n\(broker.describe())")
        print("multi-host: a vanished subscriber host was dropped by keepalive after \(ContinuousClock.now - cut)")
    }

    //   brokerA 10.77.0.1, brokerB 10.77.0.2; pub 10.77.0.11 and sub 10.77.0.21 use both (NBP-1 §17)
    @Test("two brokers on two hosts: one host's link cut without a reset mid-stream, nothing lost, nothing twice")
    func redundantBrokerHostCut() async throws {
        guard let network = try await networkOrSkip() else { return }
        defer { network.destroy() }
        let children = try Children()
        defer { children.killAll() }
        for (host, address) in [("brokerA", "10.77.0.1"), ("brokerB", "10.77.0.2"), ("pub", "10.77.0.11"), ("sub", "10.77.0.21")] {
            try await network.addHost(host, address: address)
        }
        let hosts = [("brokerA", "10.77.0.1"), ("brokerB", "10.77.0.2")]
        var brokers: [Child] = []
        for (host, address) in hosts {
            let broker = try startNbus(
                network, children, host, on: host,
                ["broker", "--frontend", "tcp://\(address):5550", "--backend", "tcp://\(address):5551"])
            try #require(await broker.waitForStdoutLine(containing: "broker: frontend") != nil, "\(broker.describe())")
            brokers.append(broker)
        }
        let total = 20_000
        let sub = try startNbus(
            network, children, "sub", on: "sub",
            ["subscribe", "ha.net", "--count", "\(total)", "--timeout", "50", "--format", "json"]
                + hosts.flatMap { ["--connect", "tcp://\($0.1):5551"] })
        // The publisher starts once the subscriber came through both brokers (or 1 s after the
        // first): brokerB carries the stream from its start, so cutting brokerA loses nothing.
        let pub = try startNbus(
            network, children, "pub", on: "pub",
            ["publish", "ha.net", "n {n}", "--count", "\(total)", "--rate", "5000", "--subscribers", "1", "--timeout", "20"]
                + hosts.flatMap { ["--connect", "tcp://\($0.1):5550"] })
        #expect(await sub.waitForStdoutLines(3_000, timeout: .seconds(30)), "\(sub.describe())")

        // brokerA's host loses its cable: no RST, no reply; the publisher gives up on it after its
        // 15 s path stall limit (once its queue to it is full) and the stream goes on through brokerB.
        try await network.cut("brokerA")
        let cut = ContinuousClock.now
        expectExit(await pub.waitForExit(timeout: .seconds(40)), 0, pub)
        let published = ContinuousClock.now
        // Within the suite's minute: what is left after 42 s from the cut goes to saying why.
        var output = await sub.waitForExit(timeout: max(.seconds(5), .seconds(42) - (published - cut)))
        var stuck: String?
        if output == nil {
            stuck = await describeStuckSubscriber(sub, expected: total, network: network)
            output = sub.output.finished ? sub.output : nil
        }
        // What brokerB forwarded (every notification and the end of stream, when it carried the
        // whole stream): once the subscriber is done, stopping it takes nothing from it.
        let stoppedB = try await stopBroker(brokers[1])
        // Fewer than the whole stream and its end: brokerB joined late, and what it missed could
        // come only through brokerA.
        let paths =
            "publisher exited \(published - cut) after the cut; brokerB forwarded \(stoppedB.fromPublishers) of "
            + "\(total + 1) (the stream and its end): \(stoppedB.line)"
        print("multi-host: host cut: \(paths)")
        if let stuck { Issue.record("the subscriber did not exit (\(paths)): \(stuck)") }
        let sequences = parseJSONLines(output?.stdoutLines ?? []).notifications.map(\.sequence)
        let check = SequenceCheck(sequences, expected: total)
        #expect(check.exact, "\(check); \(paths)\n\(sub.describe())\n\(pub.describe())")
        #expect(
            summaryCounts(output?.stderrText, "subscribe", "printed", "lostUpstream") == [total, 0],
            "\(paths)\n\(sub.describe())")
    }

    //   siteA (10.77.0.1) <- pubA (orders.created.eu), subA (orders.>)
    //     ^ backend :5551
    //     | siteB's frontend connects there (nbus broker --upstream tcp://10.77.0.1:5551)
    //   siteB (10.77.0.2) <- pubB (orders.shipped.us), subB (orders.>)
    @Test("a chain of two brokers (--upstream): one way, exactly once, subscriptions reach the first publisher")
    func brokerChain() async throws {
        guard let network = try await networkOrSkip() else { return }
        defer { network.destroy() }
        let children = try Children()
        defer { children.killAll() }
        let count = 300
        for (host, address) in [
            ("siteA", "10.77.0.1"), ("siteB", "10.77.0.2"), ("pubA", "10.77.0.11"), ("pubB", "10.77.0.12"),
            ("subA", "10.77.0.21"), ("subB", "10.77.0.22"),
        ] {
            try await network.addHost(host, address: address)
        }
        func nbus(_ host: String, _ arguments: [String]) throws -> Child {
            try startNbus(network, children, host, on: host, arguments)
        }
        func endpoint(_ site: String, _ port: Int) -> String { "tcp://10.77.0.\(site == "siteA" ? 1 : 2):\(port)" }

        let siteA = try nbus("siteA", ["broker", "--frontend", endpoint("siteA", 5550), "--backend", endpoint("siteA", 5551)])
        let siteB = try nbus(
            "siteB",
            ["broker", "--frontend", endpoint("siteB", 5550), "--backend", endpoint("siteB", 5551), "--upstream",
             endpoint("siteA", 5551)])
        for broker in [siteA, siteB] {
            let banner = await broker.waitForStdoutLine(containing: "broker: frontend")
            try #require(banner != nil, "the broker did not announce its endpoints:\n\(broker.describe())")
        }
        #expect(
            siteB.output.stdoutLines.first
                == "broker: frontend \(endpoint("siteB", 5550)) backend \(endpoint("siteB", 5551)) upstream \(endpoint("siteA", 5551))")

        let subscribe = ["subscribe", "orders.>", "--timeout", "30", "--format", "json", "--stats"]
        // subA sees siteA's publisher only: the chain carries nothing from siteB up to siteA.
        let subA = try nbus("subA", subscribe + ["--count", "\(count)", "--connect", endpoint("siteA", 5551)])
        let subB = try nbus("subB", subscribe + ["--count", "\(2 * count)", "--connect", endpoint("siteB", 5551)])
        // pubA waits for both subscribers: subB's subscription has to cross siteB and siteA to reach it.
        let pubA = try nbus(
            "pubA",
            ["publish", "orders.created.eu", "a-{n}", "--count", "\(count)", "--subscribers", "2", "--timeout", "30",
             "--connect", endpoint("siteA", 5550)])
        let pubB = try nbus(
            "pubB",
            ["publish", "orders.shipped.us", "b-{n}", "--count", "\(count)", "--subscribers", "1", "--timeout", "30",
             "--connect", endpoint("siteB", 5550)])
        for publisher in [pubA, pubB] {
            let output = await publisher.waitForExit()
            expectExit(output, 0, publisher)
            #expect(
                output?.stderrText.contains("posted \(count), sent \(count), unsent 0") == true, "\(publisher.describe())")
        }
        #expect(await subA.waitForStdoutLines(count), "\(subA.describe())")
        #expect(await subB.waitForStdoutLines(2 * count), "\(subB.describe())")
        async let exitA = awaitSubscriberExit(subA)
        async let exitB = awaitSubscriberExit(subB)
        let (outputA, outputB) = await (exitA, exitB)
        expectExit(outputA, 0, subA)
        expectExit(outputB, 0, subB)

        let atB = parseJSONLines(subB.output.stdoutLines)
        #expect(atB.other.isEmpty, "subB printed gaps or unparsable lines: \(atB.other.prefix(5))")
        #expect(Set(atB.notifications.map(\.name)) == ["orders.created.eu", "orders.shipped.us"])
        let fromAatB = expectStream(atB.notifications, name: "orders.created.eu", count: count, payloadPrefix: "a", at: "subB")
        expectStream(atB.notifications, name: "orders.shipped.us", count: count, payloadPrefix: "b", at: "subB")
        let atA = parseJSONLines(subA.output.stdoutLines)
        #expect(atA.other.isEmpty, "subA printed gaps or unparsable lines: \(atA.other.prefix(5))")
        #expect(Set(atA.notifications.map(\.name)) == ["orders.created.eu"], "siteB's notifications went up the chain")
        let fromAatA = expectStream(atA.notifications, name: "orders.created.eu", count: count, payloadPrefix: "a", at: "subA")
        #expect(fromAatA != nil && fromAatA == fromAatB, "publisher ids")
        for (subscriber, received) in [(subA, count), (subB, 2 * count)] {
            #expect(
                summaryCounts(subscriber.output.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally", "rejectedMalformed")
                    == [received, 0, 0, 0], "\(subscriber.describe())")
            let stats = try #require(patternStats(subscriber.output.stderrText, "orders.>"), "\(subscriber.describe())")
            #expect(stats["received"] == UInt64(received) && stats["delivered"] == UInt64(received), "\(stats)")
            #expect(stats["lostUpstream"] == 0 && stats["droppedLocalBuffer"] == 0, "\(stats)")
        }

        // siteB took pubA's notifications from siteA as if from a local publisher.
        let stoppedB = try await stopBroker(siteB)
        let stoppedA = try await stopBroker(siteA)
        #expect(stoppedB.fromPublishers >= 2 * count, "\(stoppedB.line)")
        #expect(stoppedA.fromPublishers >= count && stoppedA.fromPublishers < 2 * count, "\(stoppedA.line)")
        print("multi-host chain: siteA \(stoppedA.line)")
        print("multi-host chain: siteB \(stoppedB.line)")
    }
}

/// A subscriber's printed sequence numbers against 1...expected, told in a line: how many, how
/// many distinct, which printed twice, which missing, where out of order.
private struct SequenceCheck: CustomStringConvertible {
    let exact: Bool
    let description: String

    init(_ sequences: [Int], expected: Int) {
        exact = sequences == Array(1...expected)
        var times: [Int: Int] = [:]
        for sequence in sequences { times[sequence, default: 0] += 1 }
        let twice = times.filter { $0.value > 1 }.keys.sorted()
        var missing: [ClosedRange<Int>] = []
        var start: Int?
        for sequence in 1...expected + 1 {
            if sequence <= expected && times[sequence] == nil {
                if start == nil { start = sequence }
            } else if let first = start {
                missing.append(first...sequence - 1)
                start = nil
            }
        }
        let outOfOrder = zip(sequences, sequences.dropFirst()).filter { $0.0 >= $0.1 }.prefix(5).map { "\($0.0)->\($0.1)" }
        description =
            "\(sequences.count) notifications printed, \(times.count) distinct of \(expected); "
            + "printed twice: \(twice.count) \(twice.prefix(10)); missing: \(missing.reduce(0) { $0 + $1.count }) "
            + "in \(missing.prefix(10)); out of order: \(outOfOrder)"
    }
}

/// What a subscriber that should have exited shows, so the failure says which way it is stuck:
/// short of its count (a sequence missing, and the gap line the merge printed for it when no
/// path could bring it) or past it and hanging (then its threads' stacks, by gdb when
/// installed, say where). Then SIGTERM, which makes it print its summary (its own count and
/// loss), and that summary.
private func describeStuckSubscriber(_ sub: Child, expected: Int, network: VirtualNetwork) async -> String {
    let parsed = parseJSONLines(sub.output.stdoutLines)
    let sequences = parsed.notifications.map(\.sequence)
    var report = "\(SequenceCheck(sequences, expected: expected)); other lines (first 5): \(parsed.other.prefix(5))"
    if Set(sequences).count < expected {
        report += "\n(short of its count: it is waiting for the rest, no stacks taken)"
    } else if let gdb = VirtualNetwork.findTool("gdb"), sub.pid > 0 {
        let stacks = try? await network.run(gdb, ["-p", "\(sub.pid)", "-batch", "-ex", "thread apply all bt"])
        report += "\nstacks (gdb):\n\(stacks.map { String($0.stdout.suffix(12_000)) } ?? "gdb failed")"
    } else {
        report += "\n(no gdb: no stacks)"
    }
    sub.signal(SIGTERM)
    let stopped = await sub.waitForExit(timeout: .seconds(5))
    report += "\nafter SIGTERM: \(stopped == nil ? "still running" : "exited"):\n\(sub.describe())"
    return report
}

/// A running virtual network, or nil after skipping the test (not root, no namespaces here).
private func networkOrSkip() async throws -> VirtualNetwork? {
    do {
        return try await VirtualNetwork.create()
    } catch let unavailable as NetworkUnavailable {
        try skip("multi-host test: \(unavailable.description)")
        return nil
    }
}

/// Skips the current test, saying why, where the suite's trait could not tell in advance (a
/// container that refuses namespaces, a kernel without netem): Swift Testing's `Test.cancel`,
/// reported as cancelled, from Swift 6.3; a 6.2 compiler can only print the message and let the
/// caller return. With NBUS_REQUIRE_NETNS=1 it is a failure instead.
private func skip(_ reason: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    if VirtualNetwork.required {
        Issue.record("NBUS_REQUIRE_NETNS=1 but: \(reason)", sourceLocation: sourceLocation)
        return
    }
    print("multi-host: SKIPPED: \(reason)")
    #if compiler(>=6.3)
    try Test.cancel(Comment(rawValue: reason), sourceLocation: sourceLocation)
    #endif
}

/// The star topology run once: start everything, wait for it to finish, check every guarantee.
private struct Star {
    static let hosts = [
        ("broker", "10.77.0.1"), ("pub1", "10.77.0.11"), ("pub2", "10.77.0.12"), ("sub1", "10.77.0.21"),
        ("sub2", "10.77.0.22"),
    ]
    static let frontend = "tcp://10.77.0.1:5550"
    static let backend = "tcp://10.77.0.1:5551"

    /// One (subscriber, name) stream and the latency of its notifications, publish to arrival.
    struct Stream {
        var subscriber: String
        var name: String
        var latency: Latency

        var report: String {
            "\(subscriber) \(name): \(latency.count) notifications, latency publish -> subscriber output "
                + String(format: "min %.1f ms, p50 %.1f ms, p99 %.1f ms, max %.1f ms", latency.min, latency.p50, latency.p99, latency.max)
        }
    }

    var streams: [Stream]
    var sub2FilteredOut: UInt64

    /// `beforeStart` runs once the hosts exist and before any process starts; false skips the run.
    static func run(
        _ network: VirtualNetwork, _ children: Children, count: Int, rate: Double?,
        beforeStart: () async throws -> Bool = { true }
    ) async throws -> Star? {
        for (host, address) in hosts { try await network.addHost(host, address: address) }
        guard try await beforeStart() else { return nil }

        let broker = try startNbus(network, children, "broker", on: "broker", ["broker", "--frontend", frontend, "--backend", backend])
        let banner = await broker.waitForStdoutLine(containing: "broker: frontend")
        try #require(banner != nil, "the broker did not announce its endpoints:\n\(broker.describe())")
        #expect(banner == "broker: frontend \(frontend) backend \(backend)")

        let subscribe = ["--timeout", "30", "--format", "json", "--stats", "--connect", backend]
        let sub1 = try startNbus(network, children, "sub1", on: "sub1", ["subscribe", "orders.>", "--count", "\(2 * count)"] + subscribe)
        let sub2 = try startNbus(network, children, "sub2", on: "sub2", ["subscribe", "orders.*.eu", "--count", "\(count)"] + subscribe)
        // Each publisher waits until its matching subscribers' subscriptions reached it through the
        // broker, across the bridge: that, not a sleep, is what makes the start order free.
        let pace = rate.map { ["--rate", "\($0)"] } ?? []
        let publish = ["--count", "\(count)", "--connect", frontend, "--timeout", "30"] + pace
        let pub1 = try startNbus(network, children, 
            "pub1", on: "pub1", ["publish", "orders.created.eu", "c-{n}", "--subscribers", "2"] + publish)
        let pub2 = try startNbus(network, children, 
            "pub2", on: "pub2", ["publish", "orders.shipped.us", "s-{n}", "--subscribers", "1"] + publish)

        for publisher in [pub1, pub2] {
            let output = await publisher.waitForExit()
            expectExit(output, 0, publisher)
            #expect(
                output?.stderrText.contains("posted \(count), sent \(count), unsent 0") == true, "\(publisher.describe())")
        }
        #expect(await sub1.waitForStdoutLines(2 * count), "\(sub1.describe())")
        #expect(await sub2.waitForStdoutLines(count), "\(sub2.describe())")
        async let exit1 = awaitSubscriberExit(sub1)
        async let exit2 = awaitSubscriberExit(sub2)
        let (output1, output2) = await (exit1, exit2)
        expectExit(output1, 0, sub1)
        expectExit(output2, 0, sub2)

        // sub1 (orders.>): both names, each from its one publisher, 1...N in order.
        let at1 = parseJSONLines(sub1.output.stdoutLines)
        #expect(at1.other.isEmpty, "sub1 printed gaps or unparsable lines: \(at1.other.prefix(5))")
        #expect(at1.notifications.count == 2 * count)
        #expect(Set(at1.notifications.map(\.name)) == ["orders.created.eu", "orders.shipped.us"])
        let createdAt1 = expectStream(at1.notifications, name: "orders.created.eu", count: count, payloadPrefix: "c", at: "sub1")
        let shippedAt1 = expectStream(at1.notifications, name: "orders.shipped.us", count: count, payloadPrefix: "s", at: "sub1")
        // sub2 (orders.*.eu): pub1's name only, the same publisher as at sub1.
        let at2 = parseJSONLines(sub2.output.stdoutLines)
        #expect(at2.other.isEmpty, "sub2 printed gaps or unparsable lines: \(at2.other.prefix(5))")
        #expect(at2.notifications.count == count)
        #expect(Set(at2.notifications.map(\.name)) == ["orders.created.eu"])
        let createdAt2 = expectStream(at2.notifications, name: "orders.created.eu", count: count, payloadPrefix: "c", at: "sub2")
        #expect(createdAt1 != nil && createdAt1 == createdAt2 && createdAt1 != shippedAt1, "publisher ids")

        // Accounting: the summary line and the per-pattern counters.
        for (subscriber, received) in [(sub1, 2 * count), (sub2, count)] {
            #expect(
                summaryCounts(subscriber.output.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally", "rejectedMalformed")
                    == [received, 0, 0, 0], "\(subscriber.describe())")
        }
        let stats1 = try #require(patternStats(sub1.output.stderrText, "orders.>"), "\(sub1.describe())")
        let stats2 = try #require(patternStats(sub2.output.stderrText, "orders.*.eu"), "\(sub2.describe())")
        for (stats, received) in [(stats1, 2 * count), (stats2, count)] {
            #expect(stats["received"] == UInt64(received) && stats["delivered"] == UInt64(received), "\(stats)")
            #expect(stats["lostUpstream"] == 0 && stats["droppedLocalBuffer"] == 0, "\(stats)")
        }
        #expect(stats1["filteredOut"] == 0, "orders.> filters nothing out: \(stats1)")
        // pub2's orders.shipped.us travels to sub2 under its ZeroMQ prefix `orders.` unless sub2's
        // subscription had not reached pub2 yet (pub2 waits for sub1 only): between 0 and N, never delivered.
        let filteredOut = stats2["filteredOut"] ?? UInt64.max
        #expect(filteredOut <= UInt64(count), "\(stats2)")

        // The traffic crossed the virtual wires: each publisher's eth0 sent, each subscriber's
        // received, at least the notifications (a batch record's fixed part alone is 26 bytes).
        for (host, frames) in [("pub1", count), ("pub2", count)] {
            let sent = try await network.trafficBytes(of: host).sent
            #expect(sent >= UInt64(frames * 26), "\(host) eth0 sent only \(sent) bytes")
        }
        for (host, frames) in [("sub1", 2 * count), ("sub2", count)] {
            let received = try await network.trafficBytes(of: host).received
            #expect(received >= UInt64(frames * 26), "\(host) eth0 received only \(received) bytes")
        }

        // The broker's counters, as on loopback.
        let stopped = try await stopBroker(broker)
        #expect(stopped.fromPublishers >= 2 * count && stopped.toSubscribers >= 2 * count, "\(stopped.line)")
        print("multi-host: \(stopped.line)")

        var streams: [Stream] = []
        for (label, subscriber) in [("sub1", sub1), ("sub2", sub2)] {
            for (name, latency) in latencies(subscriber.output).sorted(by: { $0.key < $1.key }) {
                streams.append(Stream(subscriber: label, name: name, latency: latency))
            }
        }
        return Star(streams: streams, sub2FilteredOut: filteredOut)
    }
}

/// Starts `nbus arguments...` on `host`: `ip netns exec <namespace> nbus ...` (ip execs nbus, so
/// signals reach it directly).
private func startNbus(
    _ network: VirtualNetwork, _ children: Children, _ label: String, on host: String, _ arguments: [String]
) throws -> Child {
    try children.start(label, command: network.ip, network.exec(on: host, [children.executable.path] + arguments))
}

/// The broker's "nbus broker: stopped: from publishers N msgs ... to subscribers M msgs" line, parsed.
private func stopBroker(_ broker: Child) async throws -> (line: String, fromPublishers: Int, toSubscribers: Int) {
    broker.signal(SIGINT)
    expectExit(await broker.waitForExit(), 0, broker)
    let stopped = try #require(
        broker.output.stderrText.split(separator: "\n").map(String.init).first { $0.contains("nbus broker: stopped:") },
        "no 'nbus broker: stopped:' line:\n\(broker.describe())")
    // Notifications, not messages: a batch frame is one message (NBP-1 §2.3).
    let counters = try Regex(#"from publishers \d+ msgs \(\d+ B, (\d+) notifications\), to subscribers \d+ msgs \(\d+ B, (\d+) notifications\)"#)
    let match = try #require(try counters.firstMatch(in: stopped), "unexpected counters line: \(stopped)")
    return (stopped, Int(match.output[1].substring ?? "") ?? -1, Int(match.output[2].substring ?? "") ?? -1)
}

/// The counters `nbus subscribe --stats --format json` gives `pattern` in its summary's `patterns`.
private func patternStats(_ stderr: String, _ pattern: String) -> [String: UInt64]? {
    let patterns = summaryObject(stderr, "subscribe")?["patterns"] as? [[String: Any]] ?? []
    guard let found = patterns.first(where: { $0["pattern"] as? String == pattern }) else { return nil }
    var counters: [String: UInt64] = [:]
    for (key, value) in found { if let number = value as? NSNumber, key != "pattern" { counters[key] = number.uint64Value } }
    return counters
}

/// Milliseconds from publish (the notification's timestamp) to the line reaching this test.
private struct Latency {
    var count = 0
    var min = 0.0
    var p50 = 0.0
    var p99 = 0.0
    var max = 0.0

    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        guard let first = sorted.first, let last = sorted.last else { return }
        count = sorted.count
        min = first
        max = last
        p50 = sorted[(sorted.count - 1) * 50 / 100]
        p99 = sorted[(sorted.count - 1) * 99 / 100]
    }
}

/// Latency per notification name, from the JSON lines' timestamps and the lines' arrival times.
private func latencies(_ output: ChildOutput) -> [String: Latency] {
    var samples: [String: [Double]] = [:]
    for (line, arrival) in zip(output.stdoutLines, output.stdoutLineArrivals) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            let name = object["name"] as? String, let timestamp = (object["timestamp"] as? NSNumber)?.uint64Value
        else { continue }
        let nanoseconds = arrival >= timestamp ? arrival - timestamp : 0
        samples[name, default: []].append(Double(nanoseconds) / 1_000_000)
    }
    return samples.mapValues(Latency.init)
}
