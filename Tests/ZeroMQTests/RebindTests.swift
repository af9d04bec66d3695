import Foundation
import Testing
import ZeroMQ
import TestSupport

// `Socket.rebind`, the memory guards' one way to drop every connection (the broker's and a
// binding bus's): it drops them, listens again, retries only an address still in use, and only
// for its limit.
@Suite("Socket.rebind: drops a listener's connections, retries only an address in use", .timeLimit(.minutes(1)))
struct RebindTests {
    enum Transport: String, CaseIterable, CustomTestStringConvertible {
        case ipc, tcp
        var testDescription: String { rawValue }
    }

    @Test("every connection accepted on the endpoint ends, and the peer connects again", arguments: Transport.allCases)
    func dropsConnectionsAndListensAgain(transport: Transport) throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let context = try Context()
        let publisher = try context.socket(.xpub)
        let endpoint = try publisher.bindResolved(transport == .ipc ? folder.ipc() : TestEndpoint.tcpAnyPort)
        let subscriber = try context.socket(.sub)
        // The subscriber's own view of its connection: made, lost, made again.
        let events = try context.monitorReader(for: subscriber, events: [.connected, .disconnected])
        defer {
            subscriber.stopMonitoring()
            events.close()
        }
        // Waits for the subscriber's next connection event, polling the XPUB meanwhile: libzmq ends
        // an accepted connection only once its socket's thread has taken the pipe's end (any call
        // on it, as a zmq_poll in an event loop), and the subscriptions it reads are not needed.
        var poller = Poller()
        poller.register(events)
        poller.register(publisher)
        func next(_ expected: SocketEvents, _ when: String) throws {
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                _ = try poller.poll(timeoutMilliseconds: 10)
                while try publisher.receiveMultipartIfReady() != nil {}
                if let frames = try events.receiveMultipartIfReady() {
                    let event = SocketEvent(frames: frames)
                    #expect(event?.event == expected, "\(when): \(String(describing: event))")
                    return
                }
            }
            Issue.record("\(when): no event within 5 s")
        }
        try subscriber.connect(endpoint)
        try subscriber.subscribe(Array("a".utf8))
        try next(.connected, "the first connection")

        var calledBetween = false
        try publisher.rebind(endpoint) { calledBetween = true }
        #expect(calledBetween)
        // No disconnection within 5 s fails the test: the connection stayed.
        try next(.disconnected, "the re-bind")
        try next(.connected, "the reconnection")
        // Listening again: what is published reaches the subscriber once its subscription is
        // back (its subscription message was taken above: published every 10 ms, up to 5 s).
        #expect(try publisher.sendUntilReadable("a.1", at: subscriber))
    }

    @Test("an address still in use is retried for the limit, then reported as in use")
    func addressInUseIsRetriedForTheLimit() throws {
        let context = try Context()
        let first = try context.socket(.pull)
        let endpoint = try first.bindResolved(TestEndpoint.tcpAnyPort)
        let taker = try context.socket(.pull)
        let limit = Duration.milliseconds(300)
        let clock = ContinuousClock()
        let started = clock.now
        do {
            // Someone else takes the port between the unbind and the bind (once libzmq has
            // closed the old listener: itself a wait while the address is in use).
            try first.rebind(endpoint, retryingWhileInUseFor: limit) {
                do { try taker.bind(endpoint, retryingWhileInUseFor: .seconds(10)) } catch {
                    Issue.record("the other socket could not take \(endpoint): \(error)")
                }
            }
            Issue.record("the re-bind took \(endpoint) from the socket holding it")
        } catch {
            #expect(error.kind == .addressInUse, "\(error)")
            #expect(error.endpoint == endpoint)
            #expect(clock.now - started >= limit, "gave up before the limit")
        }
    }

    @Test("any other error is thrown at once, not retried")
    func otherErrorsAreNotRetried() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let context = try Context()
        let socket = try context.socket(.pull)
        let endpoint = try socket.bindResolved(folder.ipc())
        let limit = Duration.seconds(30)
        let clock = ContinuousClock()
        let started = clock.now
        do {
            // The folder of the socket file goes: the bind cannot succeed, however long it waits.
            try socket.rebind(endpoint, retryingWhileInUseFor: limit) { folder.remove() }
            Issue.record("bound \(endpoint) in a folder that is gone")
        } catch {
            #expect(error.kind != .addressInUse, "\(error)")
            #expect(error.operation == "zmq_bind")
            #expect(clock.now - started < .seconds(10), "retried an error that cannot go away")
        }
    }

    @Test("unbinding an endpoint that is not bound fails at once and calls nothing")
    func unboundEndpointFails() throws {
        let context = try Context()
        let socket = try context.socket(.pull)
        var called = false
        #expect(throws: ZMQError.self) {
            try socket.rebind("tcp://127.0.0.1:1") { called = true }
        }
        #expect(!called)
    }
}
