import Foundation
import Testing
import ZeroMQ
import TestSupport

@Suite("Poller, proxy, CURVE keys and library facts")
struct PollerProxyCurveTests {
    @Test("The poller reports readable only when a message waits")
    func pollerReadiness() throws {
        let context = try Context()
        let endpoint = TestEndpoint.inproc()
        let a = try context.socket(.pair)
        try a.bind(endpoint)
        let b = try context.socket(.pair)
        try b.connect(endpoint)
        var poller = Poller()
        let index = poller.register(b, for: .readable)
        #expect(try poller.poll(timeoutMilliseconds: 0) == 0)
        // A Duration: zero only checks; a sub-millisecond wait rounds up to 1 ms, not to "just check".
        #expect(try poller.poll(timeout: .zero) == 0)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try poller.poll(timeout: .microseconds(200)) == 0)
        #expect(clock.now - start >= .microseconds(900))
        try a.send("x")
        #expect(try poller.poll(timeoutMilliseconds: 5_000) == 1)
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(try poller.poll(timeout: nil) == 1)
        #expect(poller.ready(at: index).contains(.readable))
    }

    @Test("The steerable proxy forwards XSUB to XPUB and stops on TERMINATE")
    func steerableProxy() throws {
        let context = try Context()
        let frontend = "inproc://proxy-front-\(UUID().uuidString)"
        let backend = "inproc://proxy-back-\(UUID().uuidString)"
        let controlEndpoint = "inproc://proxy-control-\(UUID().uuidString)"
        let bound = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                let xsub = try context.socket(.xsub)
                try xsub.bind(frontend)
                let xpub = try context.socket(.xpub)
                try xpub.bind(backend)
                let control = try context.socket(.pair)
                try control.bind(controlEndpoint)
                bound.signal()
                try Proxy.run(frontend: xsub, backend: xpub, control: control)
            } catch {
                bound.signal()
            }
            stopped.signal()
        }
        thread.start()
        bound.wait()

        // The publisher is an XPUB so the forwarded subscription is a real readiness signal.
        let publisher = try context.socket(.xpub)
        try publisher.set(.receiveTimeout, .milliseconds(5_000))
        try publisher.connect(frontend)
        let subscriber = try context.socket(.sub)
        try subscriber.set(.receiveTimeout, .milliseconds(5_000))
        try subscriber.connect(backend)
        try subscriber.subscribe(Array("t".utf8))
        try publisher.awaitSubscription(Array("t".utf8))

        try publisher.send("t.1")
        #expect(try subscriber.receiveString() == "t.1")

        let control = try context.socket(.pair)
        try control.connect(controlEndpoint)
        try control.send(Proxy.Command.terminate.rawValue)
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }

    @Test(
        "Generated CURVE keys are 40 Z85 characters and the public key derives from the secret",
        .enabled(if: LibZMQ.has("curve"), "libzmq was built without CURVE"))
    func curveKeys() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.utf8.count == 40 && pair.secretKey.utf8.count == 40)
        #expect(try CurveKeyPair.publicKey(forSecretKey: pair.secretKey) == pair.publicKey)
        #expect(try CurveKeyPair.generate() != pair)
    }

    @Test("Z85 round-trips and matches RFC 32's test vector")
    func z85() throws {
        let rfcBytes: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        #expect(try Z85.encode(rfcBytes) == "HelloWorld")
        #expect(try Z85.decode("HelloWorld") == rfcBytes)
        #expect(throws: ZMQError.self) { try Z85.encode([1, 2, 3]) }
        #expect(throws: ZMQError.self) { try Z85.decode("Hell") }
        #expect(throws: ZMQError.self) { try Z85.decode("Hello Worl") }
    }

    @Test("The linked libzmq is 4.x with ipc")
    func libraryFacts() {
        #expect(LibZMQ.version.major == 4)
        #expect(LibZMQ.has("ipc"))
    }
}
