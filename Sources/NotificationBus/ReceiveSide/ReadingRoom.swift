/// What a subscription still takes before it asks the I/O thread to stop reading: notifications
/// and bytes below its `suspendProducer` capacity and byte bound. Unbounded for any other
/// subscription (a drop policy never stops reading) and for a sink that has room.
///
/// A read round is bounded by the least room of a bus's subscriptions (`BusReceiver.read`),
/// because what one round reads lands in the buffers at once: unbounded, a round of 32 KiB
/// batches took up to 14,918 notifications into a buffer of 8,192, and the socket then went
/// unread until the consumer had worked through the overshoot as well, long enough for a broker
/// holding its budget to cut a subscriber that was still moving (docs/benchmarks/send-side.md).
struct ReadingRoom: Equatable {
    var notifications: Int
    var bytes: Int

    /// No bound from this subscription.
    static let unbounded = ReadingRoom(notifications: .max, bytes: .max)
    /// Full: reading stops until the consumer makes room.
    static let none = ReadingRoom(notifications: 0, bytes: 0)

    /// Whether the subscription is full, so reading must stop (`SubscriptionStateMachine.wantsProducerPaused`).
    var isExhausted: Bool { notifications <= 0 || bytes <= 0 }

    /// The least of the two, bound by bound: what a round may read without passing either.
    func narrowed(to other: ReadingRoom) -> ReadingRoom {
        ReadingRoom(notifications: min(notifications, other.notifications), bytes: min(bytes, other.bytes))
    }
}
