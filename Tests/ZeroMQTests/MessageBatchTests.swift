import Testing
import ZeroMQ
import TestSupport

@Suite("Messages built off the socket's thread, sent in batches")
struct MessageBatchTests {
    private func message(_ text: String) throws -> Message {
        let bytes = Array(text.utf8)
        var message = try Message(size: bytes.count)
        message.withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
        return message
    }

    @Test("A batch sends its messages in order, byte for byte, and grows past its first capacity")
    func sendsInOrder() throws {
        let context = try Context()
        let endpoint = TestEndpoint.inproc()
        let push = try context.socket(.push)
        try push.bind(endpoint)
        let pull = try context.socket(.pull)
        try pull.set(.receiveTimeout, .milliseconds(5_000))
        try pull.connect(endpoint)

        var batch = MessageBatch(capacity: 2)
        for index in 0..<100 { batch.append(try message("message \(index) " + String(repeating: "x", count: index))) }
        let queued = batch.count
        #expect(queued == 100)
        #expect(try push.send(&batch, mode: .blocking) == 100)
        let unsent = batch.unsentCount
        #expect(unsent == 0)
        for index in 0..<100 {
            #expect(try pull.receiveString() == "message \(index) " + String(repeating: "x", count: index))
        }
        let neverSent = batch.removeAll()
        #expect(neverSent == 0)
        let empty = batch.isEmpty
        #expect(empty)
    }

    @Test("A refused send leaves the rest queued; removeAll reports what was never sent")
    func refusedSendsStayQueued() throws {
        let context = try Context()
        let endpoint = TestEndpoint.inproc()
        let push = try context.socket(.push)
        try push.set(.sendHighWaterMark, 5)
        try push.bind(endpoint)
        let pull = try context.socket(.pull)
        try pull.set(.receiveHighWaterMark, 5)
        try pull.connect(endpoint)

        var batch = MessageBatch()
        for index in 0..<50 { batch.append(try message("m\(index)")) }
        let sent = try push.send(&batch, mode: .dontWait)
        // inproc joins both HWMs: about 10 fit, never all 50.
        #expect(sent > 0 && sent < 50)
        let unsent = batch.unsentCount
        #expect(unsent == 50 - sent)
        try pull.set(.receiveTimeout, .milliseconds(5_000))
        #expect(try pull.receiveString() == "m0")
        let neverSent = batch.removeAll()
        #expect(neverSent == 50 - sent)
    }
}
