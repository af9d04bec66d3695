/// A first-in first-out queue of `BusEvent`s that moves its elements in and out, never copies them.
///
/// `Deque.append` copies its argument (it is captured by a closure), which cost a retain and a
/// release of each notification's payload on the I/O thread (about 2% of the subscriber's CPU in
/// the profile). Here `append` stores the value it is given and `popFirst` takes it back out
/// (`Optional.take()` on the slot), so an event crosses batch, subscription buffer and iterator
/// without reference-count traffic. Slots before `head` are empty; the array is reset when the
/// queue drains and compacted when more than half of it is spent.
@usableFromInline
struct EventQueue: Sendable {
    @usableFromInline var slots: [BusEvent?] = []
    @usableFromInline var head = 0

    @usableFromInline init() {}

    /// Whether no event is queued.
    @inlinable var isEmpty: Bool { head == slots.count }

    /// The number of queued events.
    @inlinable var count: Int { slots.count - head }

    /// Adds `event` at the back, moving it in.
    @inlinable
    mutating func append(_ event: consuming BusEvent) {
        slots.append(consume event)
    }

    /// Removes and returns the front event, moving it out; nil when empty.
    @inlinable
    mutating func popFirst() -> BusEvent? {
        guard head < slots.count else { return nil }
        let event = slots[head].take()
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= slots.count {
            // Mostly spent: drop the empty front so the array does not grow without bound.
            slots.removeFirst(head)
            head = 0
        }
        return event
    }

    /// Moves every event of `other`, in order, to the back of this queue; `other` ends empty.
    mutating func append(contentsOf other: inout EventQueue) {
        if isEmpty {
            swap(&self, &other)
            return
        }
        while let event = other.popFirst() { append(consume event) }
    }

    /// Removes everything, keeping the storage.
    mutating func removeAll() {
        slots.removeAll(keepingCapacity: true)
        head = 0
    }

    /// The front event, if any (a copy; for inspection).
    var first: BusEvent? { isEmpty ? nil : slots[head] }

    /// The back event, if any (a copy; for inspection).
    var last: BusEvent? { isEmpty ? nil : slots[slots.count - 1] }

    /// Replaces the front event (the queue must not be empty).
    mutating func replaceFirst(with event: consuming BusEvent) {
        precondition(!isEmpty, "replaceFirst on an empty EventQueue")
        slots[head] = consume event
    }

    /// Replaces the back event (the queue must not be empty).
    mutating func replaceLast(with event: consuming BusEvent) {
        precondition(!isEmpty, "replaceLast on an empty EventQueue")
        slots[slots.count - 1] = consume event
    }

    /// Adds `event` at the front.
    mutating func prepend(_ event: consuming BusEvent) {
        if head > 0 {
            head -= 1
            slots[head] = consume event
        } else {
            slots.insert(consume event, at: 0)
        }
    }

    /// Removes the first queued notification (not a gap); returns its `bufferedSize`, or nil
    /// when there was none.
    mutating func removeFirstNotification() -> Int? {
        guard let index = slots[head...].firstIndex(where: { $0?.isNotification ?? false }) else { return nil }
        let size = slots[index]?.bufferedSize ?? 0
        slots.remove(at: index)
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        }
        return size
    }

    /// The number of queued notifications (gaps not counted).
    var notificationCount: Int {
        slots[head...].reduce(0) { $0 + (($1?.isNotification ?? false) ? 1 : 0) }
    }

    /// The `bufferedSize` of the queued notifications, together.
    var notificationBytes: Int {
        slots[head...].reduce(0) { $0 + ($1?.bufferedSize ?? 0) }
    }
}
