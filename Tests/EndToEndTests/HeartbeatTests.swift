#if canImport(Glibc)
import Glibc
#endif
import NotificationBus
import Testing

@Suite("Heartbeats: a peer that stops answering is noticed (real processes)", .timeLimit(.minutes(1)))
struct HeartbeatTests {
    @Test("A frozen broker (SIGSTOP, its TCP connections still open) is dropped by heartbeats; after SIGCONT everything reconnects and flows")
    func frozenBrokerIsNoticedAndRejoined() async throws {
        let children = try Children()
        defer { children.killAll() }
        let broker = try children.start(
            "broker", ["broker", "--frontend", "tcp://127.0.0.1:*", "--backend", "tcp://127.0.0.1:*", "--heartbeat", "0.1"])
        let banner = try #require(await broker.waitForStdoutLine(containing: "broker: frontend"), "\(broker.describe())")
        let words = banner.split(separator: " ").map(String.init)
        try #require(words.count == 5, "unexpected banner: \(banner)")
        let (frontend, backend) = (words[2], words[4])

        // Heartbeats every 100 ms, dead after 300 ms (the defaults are 5 s and 15 s).
        var publisherConfiguration = BusConfiguration(publish: [.connect(frontend)])
        var subscriberConfiguration = BusConfiguration(subscribe: [.connect(backend)])
        publisherConfiguration.heartbeatInterval = .milliseconds(100)
        publisherConfiguration.heartbeatTimeout = .milliseconds(300)
        subscriberConfiguration.heartbeatInterval = .milliseconds(100)
        subscriberConfiguration.heartbeatTimeout = .milliseconds(300)
        let publisher = try Bus(publisherConfiguration)
        let subscriber = try Bus(subscriberConfiguration)
        let name = NotificationName("beat.tick")
        let pattern = NamePattern("beat.>")
        let stream = try subscriber.notifications(named: pattern)
        try await publisher.waitForSubscribers(count: 1, matching: name)

        // Frozen, not dead: the kernel keeps its TCP connections open, so only heartbeats can tell.
        broker.signal(SIGSTOP)
        await broker.waitUntilStoppedOrGone()
        try await publisher.waitForNoSubscribers(matching: name, timeout: .seconds(10))

        broker.signal(SIGCONT)
        try await publisher.waitForSubscribers(count: 1, matching: name, timeout: .seconds(10))
        try await subscriber.ready(pattern, timeout: .seconds(10))
        try await publisher.post(name: name, payload: Array("after".utf8))
        var iterator = stream.makeAsyncIterator()
        let arrived = await iterator.next()
        #expect(arrived.map { String(decoding: $0.payload, as: UTF8.self) } == "after")

        await publisher.close()
        await subscriber.close()
    }
}
