import Testing
import ZeroMQ
import TestSupport

// What libzmq 4.3 does with a peer that sends a burst and closes while this SUB's queue is full:
// the bus's guarantees lean on it (a subscriber at its receive mark when a publisher closes,
// a broker shutting down a stalled subscriber's connection).
//
// The receiving engine stops reading its descriptor while the queue is full. Over ipc the peer's
// close makes the descriptor report hang-up, which epoll reports even though reading stopped:
// the engine then marks an I/O error, removes the descriptor, and once the queue has room again
// delivers only what it had already read; what the kernel still held is never read
// (stream_engine_base.cpp, `in_event_internal`: "if (_input_stopped) { rm_fd (_handle);
// _io_error = true; }"). Over tcp a close is a FIN, which reports no hang-up while reading is
// stopped: everything sent before the close arrives. Found as the tail a raw publisher lost in
// ReceiveLimitsTests with a 1,000-frame receive mark (every run).
@Suite("A peer closing while this SUB's queue is full (libzmq's engine)", .timeLimit(.minutes(1)))
struct PeerCloseWhileFullTests {
    enum Transport: String, CaseIterable, CustomTestStringConvertible {
        case ipc, tcp
        var testDescription: String { rawValue }
    }

    /// Sends `count` small frames to a SUB (receive mark 100) that does not read, closes the
    /// sender, waits until its context has written everything out, then reads what arrives.
    private func deliveredAfterClose(_ transport: Transport, count: Int) throws -> Int {
        let receiverContext = try Context()
        let subscriber = try receiverContext.socket(.sub)
        try subscriber.set(.receiveHighWaterMark, 100)
        try subscriber.set(.receiveTimeout, .milliseconds(2_000))
        try subscriber.set(.linger, .zero)
        defer { subscriber.close() }

        let senderContext = try Context()
        let publisher = try senderContext.socket(.xpub)
        // Nothing dropped at the sender: a send waits for room (10 s at most), and the close
        // writes everything queued out before the context ends (10 s at most).
        try publisher.set(.xpubNoDrop, true)
        try publisher.set(.sendTimeout, .milliseconds(10_000))
        try publisher.set(.receiveTimeout, .milliseconds(5_000))
        try publisher.set(.linger, .milliseconds(10_000))
        let endpoint = try publisher.bindResolved(transport == .ipc ? try temporaryIPCEndpoint() : TestEndpoint.tcpAnyPort)
        try subscriber.connect(endpoint)
        try subscriber.subscribe([])
        try publisher.awaitSubscription([])
        // 500 x 32 B: less than the kernel's socket buffers, so every send completes while the
        // SUB reads nothing (its queue holds 100). 2,000 did not fit over ipc, and 1,000 once did
        // not among 500 parallel tests.
        for index in 0..<count {
            var frame = [UInt8](repeating: 0x2e, count: 32)
            withUnsafeBytes(of: UInt32(index).bigEndian) { frame.replaceSubrange(0..<4, with: $0) }
            try publisher.send(frame)
        }
        publisher.close()
        let closing = ContinuousClock.now
        senderContext.terminate()  // returns once the linger has written everything out
        // Well within the 10 s linger: the sender dropped nothing, all of it reached the kernel.
        try #require(ContinuousClock.now - closing < .seconds(5), "the sender could not write its burst out")

        var delivered = 0
        while let frame = try? subscriber.receive() {
            // In order, none repeated: the n-th frame received is frame n.
            let index = frame.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            guard index == delivered else { break }
            delivered += 1
        }
        return delivered
    }

    @Test("over tcp everything sent before the close arrives")
    func tcpDeliversTheTail() throws {
        let count = 500
        #expect(try deliveredAfterClose(.tcp, count: count) == count)
    }

    @Test("over ipc libzmq drops what the kernel still held (a known upstream limit: the bus counts it where it can)")
    func ipcDropsTheTail() throws {
        let count = 500
        let delivered = try deliveredAfterClose(.ipc, count: count)
        // Recorded, not hidden: if a libzmq release reads the rest, this known issue stops
        // showing and the test says so (then NBP-1 §13 and docs/deployment.md can drop the note).
        withKnownIssue("libzmq 4.3 drops the kernel-held tail of an ipc peer that closes while the SUB's queue is full") {
            #expect(delivered == count, "\(delivered) of \(count) delivered")
        }
        #expect(delivered >= 100, "the queue's own 100 must arrive: \(delivered)")
    }
}
