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
}
