#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// Faults survived with real processes: a broker killed with SIGKILL mid-stream and restarted on
// the same endpoints, a publisher killed with SIGKILL and replaced. Every child is SIGKILLed on
// every exit path; every wait is bounded and waits on something a process shows.

/// One gap line of `nbus subscribe --format json`.
struct ReceivedGap: Equatable, Sendable {
    var cause: String
    var count: Int
    var name: String
    var publisherID: String
    var sequences: ClosedRange<Int>
}

/// The gap lines among `nbus subscribe --format json` output.
func parseGapLines(_ lines: [String]) -> [ReceivedGap] {
    lines.compactMap { line in
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            let cause = object["gap"] as? String,
            let count = (object["count"] as? NSNumber)?.intValue,
            let name = object["name"] as? String,
            let publisherID = object["publisherID"] as? String,
            let first = (object["firstSequence"] as? NSNumber)?.intValue,
            let last = (object["lastSequence"] as? NSNumber)?.intValue, first <= last
        else { return nil }
        return ReceivedGap(cause: cause, count: count, name: name, publisherID: publisherID, sequences: first...last)
    }
}

/// Checks the accounting identity of one (publisher, name) stream at a subscriber: delivered in
/// order, and the delivered sequences and the gaps' ranges partition 1...published exactly.
/// Returns (delivered, lost).
@discardableResult
func expectExactAccounting(
    notifications: [ReceivedNotification], gaps: [ReceivedGap], published: Int, at subscriber: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> (delivered: Int, lost: Int) {
    let sequences = notifications.map(\.sequence)
    #expect(
        zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "\(subscriber): delivered out of order",
        sourceLocation: sourceLocation)
    let lost = gaps.reduce(0) { $0 + $1.count }
    #expect(
        sequences.count + lost == published,
        "\(subscriber): delivered \(sequences.count) + lost \(lost) != published \(published)", sourceLocation: sourceLocation)
    var covered = Set(sequences)
    for gap in gaps {
        #expect(gap.cause == "lostUpstream" && gap.sequences.count == gap.count, "\(gap)", sourceLocation: sourceLocation)
        for sequence in gap.sequences {
            #expect(covered.insert(sequence).inserted, "\(subscriber): \(sequence) both delivered and lost", sourceLocation: sourceLocation)
        }
    }
    // Compared as a Bool: a failed set comparison would print thousands of numbers.
    let missing = Set(1...published).subtracting(covered)
    let extra = covered.subtracting(1...published)
    #expect(
        missing.isEmpty && extra.isEmpty,
        "\(subscriber): sequences and gaps do not cover 1...\(published): \(missing.count) missing (first \(missing.sorted().prefix(5))), \(extra.count) outside",
        sourceLocation: sourceLocation)
    return (sequences.count, lost)
}

// Three minutes: a hang guard, not a speed target; two heavy jobs beside the suite once made a
// 60,000-post close outlast one minute (issue 38 item 11).
@Suite("nbus faults survived (real processes)", .serialized, .timeLimit(.minutes(3)))
struct FaultToleranceTests {
    enum Transport: String, CaseIterable, Sendable {
        case ipc, tcp
    }

    @Test(
        "broker killed with SIGKILL mid-stream and restarted on the same endpoints: both sides reconnect, the outage is an exact gap",
        arguments: Transport.allCases)
    func brokerRestart(transport: Transport) async throws {
        let children = try Children()
        defer { children.killAll() }
        // ipc: the restarted broker binds over the dead one's socket files. tcp: the first broker
        // picks free ports, the second binds exactly those.
        let requested =
            transport == .ipc
            ? (children.folder.ipc("f.sock"), children.folder.ipc("b.sock")) : ("tcp://127.0.0.1:*", "tcp://127.0.0.1:*")
        let first = try children.start("broker 1", ["broker", "--frontend", requested.0, "--backend", requested.1])
        let banner = try #require(
            await first.waitForStdoutLine(containing: "broker: frontend"), "no banner:\n\(first.describe())")
        let words = banner.split(separator: " ").map(String.init)
        try #require(words.count == 5, "unexpected banner: \(banner)")
        let (frontend, backend) = (words[2], words[4])

        let published = 2_000
        let subscriber = try children.start(
            "subscriber", ["subscribe", "restart.>", "--connect", backend, "--format", "json"])
        let publisher = try children.start(
            "publisher",
            // A loaded machine may take seconds to bring the subscriber back through the new
            // broker: close waits for it (the subscribers the dead broker took away) up to 30 s.
            ["publish", "restart.tick", "r-{n}", "--count", "\(published)", "--rate", "1000", "--connect", frontend,
             "--timeout", "30", "--close-timeout", "30", "--format", "json"])
        try #require(await subscriber.waitForStdoutLines(200), "\(subscriber.describe())")

        first.signal(SIGKILL)
        let killed = try #require(await first.waitForExit(), "\(first.describe())")
        #expect(killed.bySignal && killed.status == SIGKILL)
        let second = try children.start("broker 2", ["broker", "--frontend", frontend, "--backend", backend])
        #expect(
            await second.waitForStdoutLine(containing: "broker: frontend \(frontend) backend \(backend)") != nil,
            "the restarted broker did not bind the same endpoints:\n\(second.describe())")

        // The publisher finishes only once the subscriber, reconnected through the new broker, has
        // acknowledged its end of stream (a stale view would leave it waiting, then say so).
        let publisherOutput = await publisher.waitForExit()
        expectExit(publisherOutput, 0, publisher)
        let publisherErrors = publisherOutput?.stderrText ?? ""
        // What it posted while no broker held its subscriber's subscription was filtered before
        // encoding (unwanted, with sequence numbers used, so the subscriber counts the gap).
        // Its JSON summary: `unwanted` counts them all, however the text splits them (never
        // wanted, lost while the broker was unreachable, not sent after the subscribers went).
        let counts = summaryCounts(publisherErrors, "publish", "posted", "sent", "unwanted", "unsent", "endOfStreamUnacknowledged")
        #expect(counts?[0] == published && counts?[3] == 0 && counts?[4] == 0, "\(publisher.describe())")
        #expect((counts?[1] ?? 0) + (counts?[2] ?? 0) == published, "\(publisher.describe())")

        let subscriberOutput = await stopSubscriber(subscriber)
        let lines = subscriber.output.stdoutLines
        let notifications = parseJSONLines(lines).notifications
        let gaps = parseGapLines(lines)
        #expect(Set(notifications.map(\.name)) == ["restart.tick"])
        #expect(Set(notifications.map(\.publisherID)).count == 1)
        let (delivered, lost) = expectExactAccounting(
            notifications: notifications, gaps: gaps, published: published, at: "subscriber")
        // A SIGKILLed broker loses what was in flight and what was posted meanwhile; on a loaded
        // machine the publisher may post nothing during the outage (it was not scheduled), so
        // `lost` may be 0: the exact accounting above is what must hold
        // (the test of a broker killed during close, below, makes sure something is lost).
        #expect(
            summaryCounts(subscriberOutput?.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally")
                == [delivered, lost, 0], "\(subscriber.describe())")

        second.signal(SIGTERM)
        expectExit(await second.waitForExit(), 0, second)
        #expect(second.output.stderrText.contains("nbus broker: stopped:"), "\(second.describe())")
        print("broker restart over \(transport): published \(published), delivered \(delivered), lost \(lost) in \(gaps.count) gap(s)")
    }

    @Test("broker killed while the publisher waits at close for a stopped subscriber's acknowledgement: the publisher waits for it to come back through the new broker, and its loss is counted, not silent")
    func brokerKilledDuringClose() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (first, frontend, backend) = try await children.startBroker()
        // 60 MB: more than the stopped subscriber's own queue (10,000 batch frames of about 4
        // notifications here) and the kernel buffers can take before it stops, however late the
        // stop lands on a loaded machine (with 3,000, a stop that came late once lost nothing).
        let published = 60_000
        let subscriber = try children.start(
            "subscriber", ["subscribe", "close.>", "--connect", backend, "--format", "json"])
        let publisher = try children.start(
            "publisher",
            ["publish", "close.tick", "c-{n}", "--count", "\(published)", "--size", "1024", "--connect", frontend,
             "--timeout", "30", "--close-timeout", "30", "--log-level", "debug"])
        try #require(await subscriber.waitForStdoutLines(1), "\(subscriber.describe())")
        // Stopped, it reads nothing: the rest waits in the broker, and the publisher, done
        // posting, waits for its acknowledgement.
        subscriber.signal(SIGSTOP)
        // 60,000 posts of 1 KiB: beside two heavy jobs (load 12-22 on two cores) posting took
        // longer than the standard 30 s wait (issue 38 item 11); the wait is no speed target.
        try #require(
            await publisher.waitForStderr(containing: "posted all; closing", timeout: .seconds(150)), "\(publisher.describe())")
        first.signal(SIGKILL)
        _ = try #require(await first.waitForExit(), "\(first.describe())")
        let second = try children.start("broker 2", ["broker", "--frontend", frontend, "--backend", backend])
        #expect(await second.waitForStdoutLine(containing: "broker: frontend") != nil, "\(second.describe())")
        subscriber.signal(SIGCONT)

        // Before, the publisher saw everyone unsubscribe with the dead broker and exited at once;
        // the subscriber never heard of what died with the broker.
        let closed = await publisher.waitForExit(timeout: .seconds(40))
        expectExit(closed, 0, publisher)
        #expect(closed?.stderrText.contains("did not acknowledge") == false, "\(publisher.describe())")
        let output = await stopSubscriber(subscriber)
        let lines = subscriber.output.stdoutLines
        let (delivered, lost) = expectExactAccounting(
            notifications: parseJSONLines(lines).notifications, gaps: parseGapLines(lines), published: published,
            at: "subscriber")
        #expect(lost > 0, "the stopped subscriber's backlog died with the broker")
        #expect(
            summaryCounts(output?.stderrText, "subscribe", "printed", "lostUpstream") == [delivered, lost], "\(subscriber.describe())")
    }

    @Test("publisher killed with SIGKILL and replaced on the same ipc path: a new publisher id, no false gap, nothing stuck")
    func publisherCrashAndRestart() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("p.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "crash.>", "--connect", endpoint, "--format", "json"])
        let crashing = try children.start(
            "publisher 1",
            ["publish", "crash.tick", "a-{n}", "--count", "100000", "--rate", "1000", "--bind", endpoint, "--timeout", "30"])
        try #require(await subscriber.waitForStdoutLines(100), "\(subscriber.describe())")
        crashing.signal(SIGKILL)
        _ = try #require(await crashing.waitForExit(), "\(crashing.describe())")

        // The replacement binds over the dead publisher's socket file; the subscriber reconnects
        // and resubscribes by itself, and the new publisher waits for that.
        let replacement = try children.start(
            "publisher 2", ["publish", "crash.tick", "b-{n}", "--count", "200", "--bind", endpoint, "--timeout", "30"])
        let replaced = await replacement.waitForExit()
        expectExit(replaced, 0, replacement)
        #expect(replaced?.stderrText.contains("posted 200, sent 200, unsent 0") == true, "\(replacement.describe())")

        let output = await stopSubscriber(subscriber)
        let parsed = parseJSONLines(subscriber.output.stdoutLines)
        #expect(parsed.other.isEmpty, "gap or unparsable lines: \(parsed.other.prefix(3))")
        let before = parsed.notifications.filter { $0.payload.hasPrefix("a-") }
        let after = parsed.notifications.filter { $0.payload.hasPrefix("b-") }
        let crashedID = try #require(Set(before.map(\.publisherID)).first)
        let replacementID = try #require(expectStream(after, name: "crash.tick", count: 200, payloadPrefix: "b", at: "subscriber"))
        #expect(Set(before.map(\.publisherID)) == [crashedID] && crashedID != replacementID)
        // What the crashed publisher got out arrived in order and complete up to where it stopped.
        #expect(before.map(\.sequence) == (0..<before.count).map { $0 + 1 })
        #expect(before.map(\.payload) == (0..<before.count).map { "a-\($0 + 1)" })
        #expect(
            summaryCounts(output?.stderrText, "subscribe", "printed", "lostUpstream", "droppedLocally") == [before.count + 200, 0, 0],
            "\(subscriber.describe())")
    }
}
