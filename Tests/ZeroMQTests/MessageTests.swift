import Testing
import ZeroMQ
import TestSupport

@Suite("Messages of any size and part count")
struct MessageTests {
    private func connectedPair() throws -> (Socket, Socket) {
        let context = try Context()
        let endpoint = TestEndpoint.inproc()
        let a = try context.socket(.pair)
        try a.bind(endpoint)
        let b = try context.socket(.pair)
        try b.connect(endpoint)
        try b.set(.receiveTimeout, .milliseconds(5_000))
        return (a, b)
    }

    @Test("A zero-byte frame arrives as an empty message")
    func zeroBytes() throws {
        let (a, b) = try connectedPair()
        try a.send([UInt8]())
        #expect(try b.receive() == [])
        #expect(b.hasMoreParts == false)
    }

    @Test("A 1 MiB frame arrives whole, not truncated")
    func oneMebibyte() throws {
        let (a, b) = try connectedPair()
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try a.send(big)
        let received = try b.receive()
        #expect(received.count == 1 << 20)
        #expect(received == big)
    }

    @Test("A 64-part message arrives as 64 parts in order")
    func sixtyFourParts() throws {
        let (a, b) = try connectedPair()
        let parts = (0..<64).map { index in [UInt8](repeating: UInt8(index), count: index) }
        try a.send(multipart: parts)
        try a.send("after")
        #expect(try b.receiveMultipart() == parts)
        #expect(try b.receiveMultipart() == [Array("after".utf8)])
    }

    @Test("Sending zero parts is an invalid-argument error")
    func zeroPartsRejected() throws {
        let (a, _) = try connectedPair()
        #expect(throws: ZMQError.self) { try a.send(multipart: []) }
    }

    @Test("The zero-copy receive lends the frame and reports more-parts")
    func zeroCopyReceive() throws {
        let (a, b) = try connectedPair()
        try a.send(multipart: [[1, 2, 3], [4]])
        let first = try b.receive { bytes, more in (Array(bytes), more) }
        let second = try b.receive { bytes, more in (Array(bytes), more) }
        #expect(first.0 == [1, 2, 3] && first.1 == true)
        #expect(second.0 == [4] && second.1 == false)
    }

    @Test("A receive timeout surfaces as wouldBlock, not a hang")
    func receiveTimeout() throws {
        let (_, b) = try connectedPair()
        try b.set(.receiveTimeout, .milliseconds(20))
        do {
            _ = try b.receive()
            Issue.record("receive returned without a message")
        } catch {
            #expect(error.kind == .wouldBlock)
        }
    }
}
