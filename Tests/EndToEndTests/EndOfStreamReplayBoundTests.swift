#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NotificationBus
import Testing
import TestSupport
import ZeroMQ

// Issue 38, item 7: the end-of-stream records a broker keeps to replay sat outside what
// `--max-memory` frees: some 490 records of 960 KB held a broker at ~360 MB for ~50 s, and the
// guard reset every connection hundreds of times meanwhile. A genuine record's payload is at most
// 64 KiB (NBP-1 §15): a larger one is forwarded but never kept, and all that is kept is bounded
// at 16 MiB (oldest dropped first), both counted.

/// An end-of-stream record for `publisher` whose payload is `size` bytes. Its first entry has an
/// empty name, so a receiver stops reading it there (malformed, NBP-1 §15.1): the broker keeps
/// records without reading their entries, and the subscriber here should not spend seconds of a
/// debug build's CPU applying millions of entries at every replay.
private func endOfStreamRecord(publisher: UInt64, payloadSize size: Int) throws -> [UInt8] {
    let payload = [UInt8](repeating: 0, count: size)
    return try EnvelopeCodec.encode(
        BusNotification(
            name: NotificationName("_nbus.eos.\(String(format: "%016llx", publisher))"), payload: payload,
            headers: ["final": "1"], sequence: 1, publisherID: publisher, timestamp: 1))
}

@Suite("end-of-stream records kept for a replay are bounded in bytes (real processes, raw ZeroMQ peer)", .serialized, .timeLimit(.minutes(2)))
struct EndOfStreamReplayBoundTests {
    @Test("records over 64 KiB are forwarded, never kept; past 16 MiB the oldest go; both counted, and a stream goes on")
    func recordsAreBoundedInBytes() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend) = try await children.startBroker(["--stats", "0.5", "--http", "127.0.0.1:0"])
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")
        let port = try #require(monitoringPort(in: broker.output.stderrText), "\(broker.describe())")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "g.>", "--connect", backend, "--count", "100", "--timeout", "60", "--format", "json"])
        let context = try Context()
        defer { context.terminate() }
        let peer = try context.socket(.xpub)
        defer { peer.close() }
        try peer.set(.linger, .zero)
        try peer.connect(frontend)
        // An XPUB sends only what is subscribed: wait until the subscriber's end-of-stream
        // subscription reached this peer through the broker.
        try peer.set(.receiveTimeout, .milliseconds(100))
        let wanted = [1] + Array("_nbus.eos.".utf8)
        var subscribed = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !subscribed, ContinuousClock.now < deadline {
            do {
                subscribed = try peer.receive() == wanted
            } catch {
                guard error.kind == .wouldBlock else { throw error }
            }
        }
        try #require(subscribed, "the peer never saw the end-of-stream subscription:\n\(broker.describe())")
        // 300 records of 60,000 B (18 MB: past the 16 MiB bound), then 40 of 960,000 B, each
        // with an id of this connection's own (so the broker's ownership check passes them).
        for index in 0..<300 { try peer.send(try endOfStreamRecord(publisher: 0xE000 + UInt64(index), payloadSize: 60_000)) }
        for index in 0..<40 { try peer.send(try endOfStreamRecord(publisher: 0xF000 + UInt64(index), payloadSize: 960_000)) }
        #expect(
            await broker.waitForStderr(containing: "end-of-stream records not kept for a replay: 40 over 64 KiB", timeout: .seconds(60)),
            "\(broker.describe())")
        let metrics = try httpGet(port: port, "/metrics").body
        #expect(metricValue(metrics, "nbus_broker_end_of_stream_records_too_large_total") == 40, "\(metrics)")
        let evicted = try #require(metricValue(metrics, "nbus_broker_end_of_stream_records_evicted_total"), "\(metrics)")
        // 16 MiB holds 279 records of 60,000 B and their headers: at least 21 of 300 went.
        #expect(evicted >= 21 && evicted < 300, "evicted \(evicted)")
        let held = try #require(metricValue(metrics, "nbus_broker_end_of_stream_replay_bytes"), "\(metrics)")
        #expect(held > 0 && held <= Double(16 << 20), "held \(held) B")
        if let promtool = OperationsTests.promtool {
            let checked = try await runTool(promtool, ["check", "metrics"], input: metrics)
            #expect(checked.status == 0, "promtool: \(checked.output)")
        }
        // Forwarding goes on: a genuine stream reaches the subscriber whole.
        let publisher = try children.start("publisher", ["publish", "g.x", "--count", "100", "--subscribers", "1", "--connect", frontend, "--timeout", "30"])
        expectExit(await publisher.waitForExit(timeout: .seconds(60)), 0, publisher)
        let received = await subscriber.waitForExit(timeout: .seconds(60))
        expectExit(received, 0, subscriber)
        #expect(summaryCounts(received?.stderrText, "subscribe", "printed", "lostUpstream") == [100, 0], "\(subscriber.describe())")
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        expectExit(stopped, 0, broker)
        #expect(stopped?.stderrText.contains("40 over 64 KiB") == true, "\(broker.describe())")
    }
}
