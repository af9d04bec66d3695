import Testing
import ZeroMQ
@testable import NotificationBus
import TestSupport

/// libzmq aborts a process (`Assertion failed: !_io_error`, stream_engine_base.cpp) when a
/// connection whose input was stopped by back-pressure sees its peer leave and then handles a
/// ZMTP heartbeat: its own PING timer, or the peer's PING still buffered (answered with a PONG).
/// A subscriber with a paused consumer is exactly that connection; CI aborted on this very
/// test while publishers still sent PINGs. Connections are now checked by TCP keepalive
/// (`ConnectionKeepalive`), which libzmq never sees. Whether a heartbeat would fall due at the
/// fatal moment is up to timing, so this test cannot force the abort, only catch it.
@Suite("A paused subscriber survives its publisher leaving", .timeLimit(.minutes(1)))
struct PausedSubscriberHeartbeatTests {
    @Test("Input stopped by a full buffer, the publisher gone, the shortest heartbeat setting: no abort, and what was kept is delivered")
    func pausedSubscriberSurvives() async throws {
        // The shortest heartbeat setting on both sides: were it ZMTP heartbeats again, PINGs every
        // 20 ms would be buffered and due while the connection below is stopped.
        var publisherConfiguration = BusConfiguration.directPublisher(bind: try temporaryIPCEndpoint())
        publisherConfiguration.heartbeatInterval = .milliseconds(20)
        publisherConfiguration.heartbeatTimeout = .milliseconds(60)
        let publisher = try Bus(publisherConfiguration)
        let endpoint = try #require(publisher.endpoints.first)
        var configuration = BusConfiguration.directSubscriber(connect: [endpoint])
        configuration.heartbeatInterval = .milliseconds(20)
        configuration.heartbeatTimeout = .milliseconds(60)
        configuration.receiveHighWaterMark = 16
        let subscriber = try Bus(configuration)
        let name: NotificationName = "paused.x"
        let stream = try subscriber.notifications(named: NamePattern(exactly: name), buffering: .suspendProducer(capacity: 1))
        try await publisher.waitForSubscribers(count: 1, matching: name)

        // Nobody consumes: the bus stops reading, ZeroMQ's pipe fills, the connection's input stops.
        let payload = [UInt8](repeating: 7, count: 4_096)
        for _ in 0..<2_000 { try await publisher.post(name: name, payload: payload) }
        await publisher.close()  // the peer goes away while the input is stopped

        // Heartbeat intervals pass with the input stopped and the peer gone: with ZMTP heartbeats the
        // abort came here, or when the consumer below restarted the input and a buffered PING was answered.
        // (A wait for a timer that must not fire, not for readiness: nothing else can show it.)
        try await Task.sleep(for: .milliseconds(300))

        // Still alive: the consumer drains what was kept, in order.
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.sequence == 1)
        await subscriber.close()
    }
}

@Suite("TCP keepalive settings, from the heartbeat settings")
struct ConnectionKeepaliveTests {
    @Test(
        "whole seconds rounded up; probes cover the timeout, spaced out past Linux's 127",
        arguments: [
            (Duration.seconds(5), Duration.seconds(15), (5, 5, 3)),
            (.milliseconds(20), .milliseconds(60), (1, 1, 1)),
            (.milliseconds(1_500), .seconds(4), (2, 2, 2)),
            (.seconds(1), .zero, (1, 1, 1)),
            (.seconds(1), .seconds(1_000), (1, 8, 125)),
            (.seconds(1), .seconds(127), (1, 1, 127)),
            (.seconds(6_553), .seconds(6_553), (6_553, 6_553, 1)),
        ] as [(Duration, Duration, (Int32, Int32, Int32))])
    func options(interval: Duration, timeout: Duration, expected: (Int32, Int32, Int32)) throws {
        let options = try #require(ConnectionKeepalive.options(interval: interval, timeout: timeout))
        #expect(options.idle == expected.0 && options.probeInterval == expected.1 && options.probes == expected.2, "\(options)")
    }

    @Test("sendStallLimit: 60 s for a publisher that only connects, none for one that binds, as set otherwise; checked")
    func sendStallLimit() throws {
        #expect(BusConfiguration(publish: [.connect("tcp://127.0.0.1:5550")]).sendStallLimit == .seconds(60))
        #expect(BusConfiguration(publish: [.bind("tcp://127.0.0.1:*")]).sendStallLimit == .zero)
        #expect(BusConfiguration(publish: [.connect("tcp://127.0.0.1:5550"), .bind("ipc:///tmp/x")]).sendStallLimit == .zero)
        #expect(BusConfiguration(publish: []).sendStallLimit == .zero)
        var configuration = BusConfiguration(publish: [.bind("tcp://127.0.0.1:*")])
        configuration.sendStallLimit = .seconds(5)
        #expect(configuration.sendStallLimit == .seconds(5))
        for bad in [Duration.milliseconds(-1), .microseconds(10), .seconds(86_401)] {
            configuration.sendStallLimit = bad
            #expect {
                try configuration.validate()
            } throws: { error in
                guard let error = error as? BusError, error.code == .invalidConfiguration, let text = error.reason else { return false }
                return text.hasPrefix("sendStallLimit")
            }
        }
    }

    @Test("zero interval: off, the socket keeps the system's default")
    func off() throws {
        #expect(ConnectionKeepalive.options(interval: .zero, timeout: .seconds(15)) == nil)
        let context = try Context()
        let socket = try context.socket(.sub)
        try ConnectionKeepalive.apply(to: socket, interval: .zero, timeout: .seconds(15))
        #expect(try socket.get(.tcpKeepalive) == -1)
        socket.close()
    }

    @Test("applied to a socket: keepalive on with the computed values, and no ZMTP heartbeats")
    func applied() throws {
        let context = try Context()
        let socket = try context.socket(.xpub)
        try ConnectionKeepalive.apply(to: socket, interval: .seconds(5), timeout: .seconds(15))
        #expect(try socket.get(.tcpKeepalive) == 1)
        #expect(try socket.get(.tcpKeepaliveIdle) == 5)
        #expect(try socket.get(.tcpKeepaliveInterval) == 5)
        #expect(try socket.get(.tcpKeepaliveCount) == 3)
        #expect(try socket.get(.heartbeatInterval) == .zero)
        socket.close()
    }
}
