import Testing
import ZeroMQ
@testable import NotificationBus
import TestSupport

/// libzmq aborts a process (`Assertion failed: !_io_error`, stream_engine_base.cpp) when a
/// connection's own heartbeat timer fires after its input was stopped by back-pressure and its
/// peer then went away. A subscriber with a paused consumer is exactly that connection, so its
/// socket sends no heartbeats of its own. This test sets up those conditions; whether the timer
/// is pending at the moment the peer leaves is up to libzmq's timing, so it cannot force the
/// abort (full test runs hit it twice in a row before the fix), only catch it when it happens.
@Suite("A paused subscriber survives its publisher leaving", .timeLimit(.minutes(1)))
struct PausedSubscriberHeartbeatTests {
    @Test("Input stopped by a full buffer, the publisher gone, heartbeats due: no abort, and the stream still ends counted")
    func pausedSubscriberSurvives() async throws {
        let publisher = try Bus(.directPublisher(bind: try temporaryIPCEndpoint()))
        let endpoint = try #require(publisher.endpoints.first)
        var configuration = BusConfiguration.directSubscriber(connect: [endpoint])
        // Heartbeats every 20 ms: several would fall due while the connection below is stopped.
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

        // Heartbeat intervals pass with the input stopped and the peer gone: the abort came here.
        // (A wait for a timer that must not fire, not for readiness: nothing else can show it.)
        try await Task.sleep(for: .milliseconds(300))

        // Still alive: the consumer drains what was kept, in order.
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.sequence == 1)
        await subscriber.close()
    }
}
