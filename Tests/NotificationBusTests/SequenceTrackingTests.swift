import Testing
@testable import NotificationBus

@Suite("Sequence numbers per (publisher, name)")
struct SequenceTrackingTests {
    @Test("A publisher numbers each name from 1, however posts to different names interleave")
    func postSequencesPerName() throws {
        let a = NotificationName("orders.created")
        let b = NotificationName("orders.cancelled")
        let long = NotificationName("a.name.longer.than.fifteen.bytes")
        var sequences = PostSequences()
        let posted = [a, a, b, a, long, long, b, b, a].map { sequences.next(for: $0) }
        #expect(posted == [1, 2, 1, 3, 1, 2, 2, 3, 4])
        #expect(sequences.all == [a: 4, b: 3, long: 2])
    }
}
