import NBP1
import Testing
import ZeroMQ
@testable import NotificationBus

@Suite("The mailbox's outbound posts: frames back to back in one reused buffer, in order")
struct OutboundPostsTests {
    func frames(_ posts: borrowing OutboundPosts) -> [[UInt8]] {
        (0..<posts.count).map { index in posts.withPostBytes(at: index) { Array($0) } }
    }

    @Test("Posts keep their order and bytes, messages of their own among them; a prepended message goes first; emptied, the queue is reused")
    func appendPrependRemove() throws {
        var posts = OutboundPosts()
        #expect(posts.isEmpty && posts.unsentCount == 0)
        posts.append(size: 3) { out in out.copyBytes(from: [1, 2, 3]) }
        posts.append(size: 0) { _ in }
        var message = try Message(size: 2)
        message.withUnsafeMutableBytes { $0.copyBytes(from: [7, 8]) }
        posts.append(message: message)
        posts.append(size: 1) { out in out[0] = 5 }
        var first = try Message(size: 4)
        first.withUnsafeMutableBytes { $0.copyBytes(from: [4, 4, 4, 4]) }
        posts.prepend(message: first)
        #expect(frames(posts) == [[4, 4, 4, 4], [1, 2, 3], [], [7, 8], [5]])
        #expect(posts.count == 5 && posts.byteCount == 4, "messages of their own take no bytes in the buffer")
        let kinds = (0..<5).map { posts.isMessage(at: $0) }
        #expect(kinds == [true, false, false, true, false])
        // A message of its own is moved out whole, not copied.
        var batch = MessageBatch()
        posts.moveMessage(at: 3, to: &batch)
        let moved = batch.withMessageBytes(at: 0) { Array($0) }
        #expect(moved == [7, 8])
        posts.removeAll()
        #expect(posts.isEmpty && posts.byteCount == 0)
        let stillMessage = posts.isMessage(at: 0)
        #expect(!stillMessage)
        // Growth past the first buffer keeps every frame whole.
        for index in 0..<2_000 {
            posts.append(size: 5) { out in out.copyBytes(from: [UInt8(index & 0xff), 1, 2, 3, UInt8(index >> 8)]) }
        }
        let all = frames(posts)
        #expect(all.count == 2_000)
        #expect(all.enumerated().allSatisfy { $0.element == [UInt8($0.offset & 0xff), 1, 2, 3, UInt8($0.offset >> 8)] })
    }

    @Test("A buffer past the kept size is given back when emptied, and works again")
    func largeBufferGivenBack() {
        var posts = OutboundPosts()
        posts.append(size: OutboundPosts.retainedCapacity + 1) { out in out.initializeMemory(as: UInt8.self, repeating: 1) }
        posts.removeAll()
        posts.append(size: 1) { out in out[0] = 2 }
        #expect(frames(posts) == [[2]])
    }

    /// Appends a post of `name` as a record (`BusCore.queue`'s batching path); returns whether
    /// it was, and the frame it stands for (what `EnvelopeCodec.write` makes of it).
    @discardableResult
    func appendRecord(
        _ posts: inout OutboundPosts, _ name: NotificationName, sequence: UInt64, payload: [UInt8],
        headers: NotificationHeaders = NotificationHeaders(), publisherID: UInt64 = 77, maximumBytes: Int = 4096,
        sameName: Bool? = nil
    ) throws -> (queued: Bool, frame: [UInt8]) {
        let size = try EnvelopeCodec.encodedSize(name: name, headers: headers, payloadCount: payload.count)
        let nameLength = name.rawValue.utf8.count
        let recordSize = EnvelopeCodec.batchedRecordSize(ofFrameCount: size, nameLength: nameLength)
        let frame = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = EnvelopeCodec.write(
                name: name, flags: 0, contentType: .json, headers: headers, payload: payload, sequence: sequence,
                publisherID: publisherID, timestamp: 1_000 + sequence, into: UnsafeMutableRawBufferPointer(buffer))
        }
        let queued = posts.appendRecord(
            name: name, sameName: sameName, nameLength: nameLength, publisherID: publisherID, recordSize: recordSize, maximumBytes: maximumBytes
        ) { out in
            EnvelopeCodec.writeBatchRecord(
                flags: 0, contentType: .json, headers: headers, payload: payload, sequence: sequence,
                timestamp: 1_000 + sequence, into: out)
        }
        return (queued, frame)
    }

    /// What the loop sends of run `position`: its batch frame with its count written.
    func batchFrame(_ posts: borrowing OutboundPosts, run position: Int) -> [UInt8] {
        let run = posts.run(at: position)
        var bytes = posts.withRunBytes(at: position) { Array($0) }
        bytes.withUnsafeMutableBytes { EnvelopeCodec.setBatchRecordCount(run.count, nameLength: run.nameLength, in: $0) }
        return bytes
    }

    /// What the loop sends of the record at `index` of run `position` as a frame of its own.
    func ownFrame(_ posts: borrowing OutboundPosts, post index: Int, run position: Int) -> [UInt8] {
        let run = posts.run(at: position)
        return posts.withRecordBytes(at: index, inRunAt: position) { record, header in
            let size = EnvelopeCodec.frameBytes(ofBatchRecordCount: record.count, nameLength: run.nameLength)
            return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                EnvelopeCodec.writeFrame(
                    ofBatchRecord: record, header: header, nameLength: run.nameLength, into: UnsafeMutableRawBufferPointer(buffer))
                count = size
            }
        }
    }

    @Test("Posts written as records make one batch frame per run of one name; it decodes to the posts, a record alone to its own frame byte for byte")
    func recordsMakeBatchFrames() throws {
        var posts = OutboundPosts()
        let a = NotificationName("bench.a")
        let b = NotificationName("other")
        var framesOfA: [[UInt8]] = []
        for sequence in 1...5 {
            let payload = [UInt8](repeating: UInt8(sequence), count: sequence * 10)
            let headers: NotificationHeaders = sequence == 2 ? ["k": "v"] : NotificationHeaders()
            let (queued, frame) = try appendRecord(&posts, a, sequence: UInt64(sequence), payload: payload, headers: headers)
            #expect(queued)
            framesOfA.append(frame)
        }
        let (queuedB, frameOfB) = try appendRecord(&posts, b, sequence: 1, payload: [9, 9])
        #expect(queuedB)
        #expect(posts.count == 6 && posts.runCount == 2)
        #expect(posts.run(at: 0).firstPost == 0 && posts.run(at: 0).count == 5)
        #expect(posts.run(at: 1).firstPost == 5 && posts.run(at: 1).count == 1)
        let batch = batchFrame(posts, run: 0)
        let decoded = try EnvelopeCodec.decodeAll(frames: [batch])
        let expected = try framesOfA.map { try EnvelopeCodec.decodeAll(frames: [$0])[0] }
        #expect(decoded == expected)
        // The same frame as the loop made by merging the five frames.
        let nameLength = a.rawValue.utf8.count
        let size = framesOfA.reduce(nameLength + 1 + WireFormat.batchHeaderSize) {
            $0 + EnvelopeCodec.batchedRecordSize(ofFrameCount: $1.count, nameLength: nameLength)
        }
        let merged = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = EnvelopeCodec.writeBatch(
                frameCount: framesOfA.count, nameLength: nameLength,
                frame: { index, body in framesOfA[index].withUnsafeBytes(body) }, into: UnsafeMutableRawBufferPointer(buffer))
        }
        #expect(batch == merged)
        #expect(ownFrame(posts, post: 5, run: 1) == frameOfB)
        #expect(ownFrame(posts, post: 3, run: 0) == framesOfA[3])
        posts.removeAll()
        #expect(posts.runCount == 0 && posts.isEmpty)
        // The buffer reused: a name begun again starts a new run.
        let (queued, frame) = try appendRecord(&posts, a, sequence: 6, payload: [])
        #expect(queued && posts.runCount == 1 && ownFrame(posts, post: 0, run: 0) == frame)
    }

    @Test("A run ends at another publisher, at a frame of its own between, past the byte bound and at 1,024 records; a prepended message shifts the runs")
    func runBoundaries() throws {
        var posts = OutboundPosts()
        let a = NotificationName("a")
        try appendRecord(&posts, a, sequence: 1, payload: [1])
        try appendRecord(&posts, a, sequence: 2, payload: [2], publisherID: 78)
        posts.append(size: 2) { out in out.copyBytes(from: [0xee, 0xee]) }
        try appendRecord(&posts, a, sequence: 3, payload: [3])
        try appendRecord(&posts, a, sequence: 4, payload: [4])
        #expect(posts.count == 5 && posts.runCount == 3)
        #expect((0..<3).map { posts.run(at: $0).firstPost } == [0, 1, 3])
        #expect((0..<3).map { posts.run(at: $0).count } == [1, 1, 2])
        #expect(!posts.isMessage(at: 2) && posts.withPostBytes(at: 2) { Array($0) } == [0xee, 0xee])
        var first = try Message(size: 1)
        first.withUnsafeMutableBytes { $0[0] = 4 }
        posts.prepend(message: first)
        #expect((0..<3).map { posts.run(at: $0).firstPost } == [1, 2, 4])
        #expect(posts.withPostBytes(at: 0) { Array($0) } == [4])
        // Still the open run: the next record joins the last one.
        try appendRecord(&posts, a, sequence: 5, payload: [5])
        #expect(posts.runCount == 3 && posts.run(at: 2).count == 3)
        let decoded = try EnvelopeCodec.decodeAll(frames: [batchFrame(posts, run: 2)])
        #expect(decoded.map(\.sequence) == [3, 4, 5])
        // The caller's word that the name is the last one's (the mailbox's sequences) joins the
        // run with no comparison; a run ended (a sequence number taken with no post) is not joined.
        try appendRecord(&posts, a, sequence: 6, payload: [6], sameName: true)
        #expect(posts.runCount == 3 && posts.run(at: 2).count == 4)
        posts.endRun()
        try appendRecord(&posts, a, sequence: 8, payload: [8], sameName: true)
        #expect(posts.runCount == 4 && posts.run(at: 3).count == 1 && posts.run(at: 3).firstPost == 8)
        try appendRecord(&posts, NotificationName("b"), sequence: 1, payload: [], sameName: false)
        #expect(posts.runCount == 5)

        // The byte bound: 100-byte payloads in 512 bytes.
        var bounded = OutboundPosts()
        for sequence in 1...10 {
            try appendRecord(&bounded, a, sequence: UInt64(sequence), payload: [UInt8](repeating: 0, count: 100), maximumBytes: 512)
        }
        let counts = (0..<bounded.runCount).map { bounded.run(at: $0).count }
        #expect(counts == [3, 3, 3, 1], "18 bytes of header and 126 per record: three in 512")
        for position in 0..<bounded.runCount { #expect(bounded.withRunBytes(at: position) { $0.count } <= 512) }
        // A record whose frame cannot fit at all is refused (the caller queues a frame).
        let (refused, _) = try appendRecord(&bounded, a, sequence: 11, payload: [UInt8](repeating: 0, count: 600), maximumBytes: 512)
        #expect(!refused && bounded.count == 10)

        // The record bound.
        var many = OutboundPosts()
        for sequence in 1...1_030 { try appendRecord(&many, a, sequence: UInt64(sequence), payload: [], maximumBytes: 1 << 20) }
        #expect(many.runCount == 2 && many.run(at: 0).count == WireFormat.maximumBatchRecords && many.run(at: 1).count == 6)
        let big = try EnvelopeCodec.decodeAll(frames: [batchFrame(many, run: 0)])
        #expect(big.count == 1_024 && big.last?.sequence == 1_024)
    }
}
