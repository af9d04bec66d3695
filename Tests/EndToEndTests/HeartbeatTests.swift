#if canImport(Glibc)
import Glibc
#endif
import NotificationBus
import Testing

/// Connections are checked by TCP keepalive, not ZMTP heartbeats (`ConnectionKeepalive` says
/// why: libzmq aborts a process that combines heartbeats with back-pressure). Keepalive cannot
/// see a frozen process on a live host, so a frozen broker is a slow one: traffic waits for it.
/// That a dead host is dropped is `MultiHostTests`' (it needs a network to cut).
@Suite("A frozen broker holds traffic and resumes (real processes)", .timeLimit(.minutes(1)))
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
}
