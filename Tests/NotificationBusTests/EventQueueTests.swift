import Testing
@testable import NotificationBus

@Suite("EventQueue: the FIFO that moves events between the I/O thread and consumers")
struct EventQueueTests {
    private func note(_ sequence: UInt64) throws -> BusEvent {
        .notification(BusNotification(name: NotificationName("queue.test"), payload: [UInt8(sequence & 0xff)], sequence: sequence))
    }

    private func sequences(_ queue: inout EventQueue) -> [UInt64] {
        var result: [UInt64] = []
        while let event = queue.popFirst() {
            if case .notification(let notification) = event { result.append(notification.sequence) }
        }
        return result
    }

    @Test("Events come out in the order they went in, across drains and compaction")
    func orderAcrossCompaction() throws {
        var queue = EventQueue()
        var expected: [UInt64] = []
        var popped: [UInt64] = []
        var next: UInt64 = 1
        // Interleave: push 3, pop 2, so the spent front grows past the compaction threshold.
        for _ in 0..<3_000 {
            for _ in 0..<3 {
                queue.append(try note(next))
                expected.append(next)
                next += 1
            }
            for _ in 0..<2 {
                if case .notification(let notification)? = queue.popFirst() { popped.append(notification.sequence) }
            }
        }
        popped += sequences(&queue)
        #expect(popped == expected)
        #expect(queue.isEmpty && queue.count == 0)
        let afterEnd = queue.popFirst()
        #expect(afterEnd == nil)
    }

    @Test("append(contentsOf:) moves every event in order and leaves the source empty")
    func appendContentsMoves() throws {
        var target = EventQueue()
        var source = EventQueue()
        for sequence in 1...3 as ClosedRange<UInt64> { source.append(try note(sequence)) }
        target.append(contentsOf: &source)  // into an empty queue: the storage is swapped
        #expect(source.isEmpty && target.count == 3)
        for sequence in 4...6 as ClosedRange<UInt64> { source.append(try note(sequence)) }
        _ = target.popFirst()
        target.append(contentsOf: &source)  // into a non-empty one: event by event
        #expect(source.isEmpty)
        #expect(sequences(&target) == [2, 3, 4, 5, 6])
    }

    @Test("Front and back can be replaced, gaps prepended, and the first notification removed past gaps")
    func editsForLocalDrops() throws {
        var queue = EventQueue()
        let gap = BusEvent.gap(Gap(cause: .droppedLocalBuffer, count: 1))
        queue.append(gap)
        queue.append(try note(1))
        queue.append(try note(2))
        #expect(queue.notificationCount == 2)
        let removed = queue.removeFirstNotification()
        #expect(removed == (try note(1)).bufferedSize)
        #expect(queue.first == gap && queue.notificationCount == 1)
        queue.replaceFirst(with: .gap(Gap(cause: .droppedLocalBuffer, count: 2)))
        queue.replaceLast(with: try note(7))
        queue.prepend(try note(0))
        _ = queue.popFirst()
        queue.prepend(try note(9))  // into the spent front slot
        var drained: [BusEvent] = []
        while let event = queue.popFirst() { drained.append(event) }
        #expect(drained == [try note(9), .gap(Gap(cause: .droppedLocalBuffer, count: 2)), try note(7)])
        let removedFromEmpty = queue.removeFirstNotification()
        #expect(removedFromEmpty == nil)
    }
}
