#if canImport(Glibc)
import Glibc
#endif
import NotificationBus
import Testing

/// Connections are checked by TCP keepalive, not ZMTP heartbeats (`ConnectionKeepalive` says
/// why: libzmq aborts a process that combines heartbeats with back-pressure). Keepalive cannot
/// see a frozen process on a live host: a frozen broker that is sent little keeps its
/// connections. One that a publisher fills is noticed by `sendStallLimit` (TCP_USER_TIMEOUT),
/// so the publisher is not held back for ever. That a dead host is dropped
/// is `MultiHostTests`' (it needs a network to cut).
@Suite("A frozen broker: kept while little is sent, dropped by a publisher it holds back (real processes)", .timeLimit(.minutes(1)))
struct HeartbeatTests {
    @Test("A frozen broker (SIGSTOP, its kernel answering keepalive) keeps its connections; after SIGCONT what was posted meanwhile arrives, in order, nothing lost")
    func frozenBrokerResumes() async throws {
        let children = try Children()
        defer { children.killAll() }
        let broker = try children.start(
            "broker", ["broker", "--frontend", "tcp://127.0.0.1:*", "--backend", "tcp://127.0.0.1:*", "--heartbeat", "1"])
        let banner = try #require(await broker.waitForStdoutLine(containing: "broker: frontend"), "\(broker.describe())")
        let words = banner.split(separator: " ").map(String.init)
        try #require(words.count == 5, "unexpected banner: \(banner)")
        let (frontend, backend) = (words[2], words[4])

        // Keepalive after 1 s idle, a dead peer dropped after 1 s of unanswered probes.
        var publisherConfiguration = BusConfiguration(publish: [.connect(frontend)])
        var subscriberConfiguration = BusConfiguration(subscribe: [.connect(backend)])
        for configuration in [\BusConfiguration.heartbeatInterval, \.heartbeatTimeout] {
            publisherConfiguration[keyPath: configuration] = .seconds(1)
            subscriberConfiguration[keyPath: configuration] = .seconds(1)
        }
        let publisher = try Bus(publisherConfiguration)
        let subscriber = try Bus(subscriberConfiguration)
        let name = NotificationName("beat.tick")
        let pattern = NamePattern("beat.>")
        let stream = try subscriber.notifications(named: pattern)
        try await publisher.waitForSubscribers(count: 1, matching: name)
        try await subscriber.ready(pattern, timeout: .seconds(10))
        var iterator = stream.makeAsyncIterator()
        try await publisher.post(name: name, payload: Array("before".utf8))
        #expect(await iterator.next().map { String(decoding: $0.payload, as: UTF8.self) } == "before")

        broker.signal(SIGSTOP)
        await broker.waitUntilStoppedOrGone()
        for index in 1...20 { try await publisher.post(name: name, payload: Array("during \(index)".utf8)) }
        // Longer than keepalive takes to drop a peer whose host is gone (1 s idle, then 1 s of
        // probes): a frozen broker's kernel answers them, so nothing may be dropped. (A wait for
        // something that must not happen, not for readiness: nothing else can show it.)
        try await Task.sleep(for: .seconds(3))
        // Returns at once while the broker's subscriber is still counted; throws if it was dropped.
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .milliseconds(100))

        broker.signal(SIGCONT)
        var arrived: [String] = []
        while arrived.count < 20, let notification = await iterator.next() {
            arrived.append(String(decoding: notification.payload, as: UTF8.self))
        }
        #expect(arrived == (1...20).map { "during \($0)" })
        #expect(stream.stats.lostUpstream == 0)

        await publisher.close()
        await subscriber.close()
    }

    @Test("A frozen broker that holds a publisher back is dropped after sendStallLimit; the publisher's posts stop waiting; after SIGCONT it rejoins and the gap is counted")
    func frozenBrokerHoldingAPublisherIsDropped() async throws {
        let children = try Children()
        defer { children.killAll() }
        let broker = try children.start("broker", ["broker", "--frontend", "tcp://127.0.0.1:*", "--backend", "tcp://127.0.0.1:*"])
        let banner = try #require(await broker.waitForStdoutLine(containing: "broker: frontend"), "\(broker.describe())")
        let words = banner.split(separator: " ").map(String.init)
        try #require(words.count == 5, "unexpected banner: \(banner)")
        let (frontend, backend) = (words[2], words[4])

        // 2 s instead of 60. Small queues, so that the posts below fill the broker's socket
        // buffer and close its window rather than queue here.
        var publisherConfiguration = BusConfiguration(publish: [.connect(frontend)])
        publisherConfiguration.sendStallLimit = .seconds(2)
        publisherConfiguration.sendHighWaterMark = 16
        publisherConfiguration.outboundCapacity = 16
        let publisher = try Bus(publisherConfiguration)
        let subscriber = try Bus(BusConfiguration(subscribe: [.connect(backend)]))
        let name = NotificationName("beat.bulk")
        let pattern = NamePattern("beat.>")
        let stream = try subscriber.notifications(named: pattern)
        try await publisher.waitForSubscribers(count: 1, matching: name)
        try await subscriber.ready(pattern, timeout: .seconds(10))
        // One delivered first: a stream's first notification is never counted as a loss, so the
        // gap below shows only once the stream has begun.
        var iterator = stream.makeAsyncIterator()
        try await publisher.post(name: name, payload: Array("before".utf8))
        #expect(await iterator.next().map { String(decoding: $0.payload, as: UTF8.self) } == "before")

        broker.signal(SIGSTOP)
        await broker.waitUntilStoppedOrGone()
        // 2,000 x 64 KiB (125 MiB) is far more than the kernels' buffers hold: without the limit,
        // these posts would wait for as long as the broker is frozen, and the test time out.
        let payload = [UInt8](repeating: 0x42, count: 65_536)
        let posting = Task {
            for _ in 0..<2_000 { try await publisher.post(name: name, payload: payload) }
        }
        defer { posting.cancel() }  // on a failed wait below, instead of posting on unobserved
        try await publisher.waitForNoSubscribers(matching: name, timeout: .seconds(20))
        try await posting.value

        broker.signal(SIGCONT)
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(20))
        try await publisher.post(name: name, payload: Array("after".utf8))
        // What the broker had read before it froze may come first; then the gap, then "after".
        var sawAfter = false
        while let notification = await iterator.next() {
            guard notification.payload.count < 100 else { continue }
            sawAfter = String(decoding: notification.payload, as: UTF8.self) == "after"
            break
        }
        #expect(sawAfter)
        #expect(stream.stats.lostUpstream > 0, "the posts that reached nobody were not counted: \(stream.stats)")

        await publisher.close()
        await subscriber.close()
    }
}
