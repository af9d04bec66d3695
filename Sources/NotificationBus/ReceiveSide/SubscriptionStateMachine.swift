/// The state of one subscription's buffer, without locks or side effects: the storage calls it
/// under its lock and runs the returned action outside (swift-service-lifecycle's pattern).
struct SubscriptionStateMachine {
    enum Phase {
        case active
        case ended
    }

    let policy: BufferingPolicy
    /// The most bytes the buffer holds before the policy applies, as well as `policy.capacity`
    /// notifications (`BusConfiguration.subscriptionBufferBytes`; 0: no byte bound). Measured
    /// by `BusNotification.bufferedSize`. One notification larger than the bound is still taken
    /// when the buffer is empty: the bound slows a stream down, it never blocks one.
    let byteLimit: Int
    private(set) var phase = Phase.active
    private var buffer = EventQueue()
    private var bufferedNotifications = 0
    private var bufferedBytes = 0
    /// Consumers waiting for an event, in the order they began to wait: usually one task; several
    /// when tasks share one sequence (each event then goes to one of them).
    private var waiters: [UnsafeContinuation<BusEvent?, Never>] = []
    /// Set when the I/O thread was told this subscription is full (suspendProducer only).
    private var producerPaused = false
    private(set) var stats = SubscriptionStats()

    /// The sink of a sink subscription while it is active (released when it ends).
    private(set) var sink: (any BusEventSink)?

    init(policy: BufferingPolicy, byteLimit: Int = 0, sink: (any BusEventSink)? = nil) {
        self.policy = policy
        self.byteLimit = max(0, byteLimit)
        self.sink = sink
    }

    /// Whether the I/O thread should stop reading for this subscription (suspendProducer only).
    var wantsProducerPaused: Bool { room.isExhausted }

    /// What the buffer takes before it is full (suspendProducer only; unbounded otherwise): the
    /// I/O thread reads no more than the least room of its subscriptions in one round, so a
    /// round fills the buffer to its capacity and passes it by one frame at most.
    var room: ReadingRoom {
        guard case .suspendProducer = policy, phase == .active else { return .unbounded }
        return ReadingRoom(
            notifications: policy.capacity - bufferedNotifications,
            bytes: byteLimit > 0 ? byteLimit - bufferedBytes : .max)
    }

    /// Whether `bytes` more (in `count` notifications) would pass the bounds. One notification
    /// into an empty buffer always fits: a large one is never stuck.
    private func wouldOverflow(adding count: Int, bytes: Int) -> Bool {
        if bufferedNotifications + count > policy.capacity { return true }
        guard byteLimit > 0, bufferedBytes + bytes > byteLimit else { return false }
        return bufferedNotifications > 0 || count > 1
    }

    // MARK: Producer side (the I/O thread)

    enum AppendAction {
        case none
        case resume(UnsafeContinuation<BusEvent?, Never>, BusEvent)
        /// Several tasks were waiting: one event each, first come first served.
        case resumeMany([(UnsafeContinuation<BusEvent?, Never>, BusEvent)])
    }

    /// Takes a batch from the I/O thread (its events in stream order, with their counts), leaving
    /// it empty. Events are moved, never copied: when nothing is buffered the two deques swap.
    mutating func append(_ batch: inout SubscriptionBatch) -> AppendAction {
        guard phase == .active else { return .none }
        stats.filteredOut += batch.filteredOut
        stats.received += UInt64(batch.notifications)
        stats.lostUpstream += batch.lostUpstream
        stats.gaps += UInt64(batch.gaps)
        let fits: Bool
        switch policy {
        case .suspendProducer:
            // The I/O thread stops reading once full; a batch may overshoot by one frame (a
            // round reads no more than the room: `room`).
            fits = true
        case .dropNewest, .dropOldest:
            fits = !wouldOverflow(adding: batch.notifications, bytes: batch.bytes)
        }
        if fits {
            // Moved whole when nothing is buffered, else event by event (never copied).
            buffer.append(contentsOf: &batch.events)
            bufferedNotifications += batch.notifications
            bufferedBytes += batch.bytes
        } else {
            while let event = batch.events.popFirst() {
                if event.isNotification { enqueueNotification(event) } else { buffer.append(event) }
            }
        }
        if wantsProducerPaused { producerPaused = true }
        return resumeWaitersIfPossible()
    }

    /// A sink subscription's batch, handed over as it is: counted as received and delivered.
    /// Returns the sink to hand it to, or nil once the subscription has ended (the batch is dropped).
    mutating func recordHandedToSink(_ batch: SubscriptionBatch) -> (any BusEventSink)? {
        guard phase == .active, let sink else { return nil }
        stats.filteredOut += batch.filteredOut
        stats.received += UInt64(batch.notifications)
        stats.delivered += UInt64(batch.notifications)
        stats.lostUpstream += batch.lostUpstream
        stats.gaps += UInt64(batch.gaps)
        return sink
    }

    private mutating func enqueueNotification(_ event: BusEvent) {
        let size = event.bufferedSize
        switch policy {
        case .suspendProducer:
            // The I/O thread stops reading once full; a batch may overshoot by its own size.
            break
        case .dropNewest:
            if wouldOverflow(adding: 1, bytes: size) {
                recordLocalDrop(atFront: false)
                return
            }
        case .dropOldest:
            // As many of the oldest as it takes to make room (several, by bytes, for a large one).
            while wouldOverflow(adding: 1, bytes: size), let removed = buffer.removeFirstNotification() {
                bufferedNotifications -= 1
                bufferedBytes -= removed
                recordLocalDrop(atFront: true)
            }
        }
        buffer.append(event)
        bufferedNotifications += 1
        bufferedBytes += size
    }

    /// Counts one local drop and reports it in-band, merging with an adjacent local-drop gap.
    private mutating func recordLocalDrop(atFront: Bool) {
        stats.droppedLocalBuffer += 1
        if case .gap(var gap)? = atFront ? buffer.first : buffer.last, gap.cause == .droppedLocalBuffer {
            gap.count += 1
            if atFront { buffer.replaceFirst(with: .gap(gap)) } else { buffer.replaceLast(with: .gap(gap)) }
            return
        }
        stats.gaps += 1
        let gap = BusEvent.gap(Gap(cause: .droppedLocalBuffer, count: 1))
        if atFront { buffer.prepend(gap) } else { buffer.append(gap) }
    }

    private mutating func resumeWaitersIfPossible() -> AppendAction {
        guard !waiters.isEmpty, let event = popFirst() else { return .none }
        let first = waiters.removeFirst()
        guard !waiters.isEmpty, !buffer.isEmpty else { return .resume(first, event) }
        var resumed = [(first, event)]
        while !waiters.isEmpty, let next = popFirst() { resumed.append((waiters.removeFirst(), next)) }
        return .resumeMany(resumed)
    }

    private mutating func popFirst() -> BusEvent? {
        guard let event = buffer.popFirst() else { return nil }
        // Through `BusEvent`'s own properties: binding the notification (`if case let`) copied
        // the event, a retain and a release of each of its fields per event.
        if event.isNotification {
            bufferedNotifications -= 1
            bufferedBytes -= event.bufferedSize
            stats.delivered += 1
        }
        return event
    }

    // MARK: Consumer side

    enum NextAction {
        case returnEvent(BusEvent, resumeProducer: Bool)
        case returnEnd
        case suspended
    }

    /// The consumer asks for the next event; if none is buffered the continuation is kept.
    mutating func next(_ continuation: UnsafeContinuation<BusEvent?, Never>) -> NextAction {
        if let event = popFirst() {
            return .returnEvent(event, resumeProducer: checkResumeProducer())
        }
        if phase == .ended { return .returnEnd }
        waiters.append(continuation)
        return .suspended
    }

    /// Without suspending: moves up to `consumerBatchLimit` buffered events into the consumer's own
    /// `local` buffer (one lock for many events); returns whether anything moved and whether the
    /// I/O thread may read again. The limit keeps what a consumer holds outside the policy's reach
    /// small: a subscription holds at most its capacity, one frame past it (`room`) and one consumer batch.
    mutating func takeAll(into local: inout EventQueue) -> (moved: Bool, resumeProducer: Bool) {
        guard !buffer.isEmpty else { return (false, false) }
        if buffer.count <= Self.consumerBatchLimit && bufferedBytes <= consumerBatchBytes {
            swap(&buffer, &local)
            stats.delivered += UInt64(bufferedNotifications)
            bufferedNotifications = 0
            bufferedBytes = 0
        } else {
            // At least one event; then up to the limits (large notifications go a few at a time).
            var taken = 0
            for _ in 0..<Self.consumerBatchLimit {
                let before = bufferedBytes
                guard taken == 0 || taken < consumerBatchBytes, let event = popFirst() else { break }
                // Its size as `popFirst` counted it out: reading `event.bufferedSize` here copied
                // the event (a retain and a release of each field; 6% of a typed in-process run's
                // samples, where the consumer lags and events are taken one by one).
                taken += before - bufferedBytes
                local.append(consume event)
            }
        }
        return (true, checkResumeProducer())
    }

    /// The most events a consumer takes from the shared buffer at once.
    static let consumerBatchLimit = 256

    /// The most bytes a consumer takes at once: an eighth of the byte bound (at least 64 KiB),
    /// so what it holds outside the bound stays small beside it.
    private var consumerBatchBytes: Int { byteLimit > 0 ? max(64 << 10, byteLimit / 8) : Int.max }

    /// An iterator went away holding `events` it had taken but not used (a loop left by `break`,
    /// or a cancelled one). While the subscription is active they go back to the front of the
    /// buffer, in order, for the next iterator (or a waiting task); once it ended they are
    /// discarded and counted. Leaves `events` empty.
    mutating func returnUndelivered(_ events: inout EventQueue) -> AppendAction {
        guard !events.isEmpty else { return .none }
        let count = events.notificationCount
        let bytes = events.notificationBytes
        stats.delivered -= UInt64(count)
        guard phase == .active else {
            stats.discardedAtEnd += UInt64(count)
            events.removeAll()
            return .none
        }
        // Older than anything buffered: they go first.
        events.append(contentsOf: &buffer)
        swap(&events, &buffer)
        bufferedNotifications += count
        bufferedBytes += bytes
        return resumeWaitersIfPossible()
    }

    /// Hysteresis: let the I/O thread read again once the consumer has taken a batch's worth
    /// (`resumeThreshold`).
    private mutating func checkResumeProducer() -> Bool {
        guard producerPaused, bufferedNotifications <= Self.resumeThreshold(policy.capacity),
            byteLimit == 0 || bufferedBytes <= byteLimit - max(1, byteLimit / 8)
        else { return false }
        producerPaused = false
        return true
    }

    /// Where a paused subscription lets reading resume: once one consumer batch
    /// (`consumerBatchLimit`, 256), at most an eighth of the capacity and at least one, has gone
    /// below it. While reading is paused the socket goes unread, and a broker holding its budget
    /// for this subscriber cuts it as stalled once its TCP progress stops for the broker's
    /// patience (0.5 s by default). Resuming at half, a consumer had to work through 4,096 of the
    /// default 8,192 first, longer than the patience below about 8,000 a second, and a subscriber
    /// that kept moving was cut (issue 41: 5,108/s lost 803,892 of 1,000,000). At 7/8 (1,024,
    /// plus the batch the consumer held and the frame a round may overshoot by) one at 5,000 a
    /// second was still cut on a loaded machine (`SlowBusSubscriberTests`, debug build). One
    /// batch: the pause is at most two batches of the consumer's work (the one it holds, the one
    /// it takes), for a wake-up of the I/O thread per 256 notifications while it is behind.
    static func resumeThreshold(_ capacity: Int) -> Int {
        capacity - max(1, min(capacity / 8, consumerBatchLimit))
    }

    // MARK: Ending

    enum EndAction {
        case none
        case resumeWaitersWithEnd([UnsafeContinuation<BusEvent?, Never>], firstEnd: Bool)
    }

    /// Ends the subscription (cancelled, iterator dropped, or the bus closed): buffered events
    /// are discarded and counted; a waiting consumer sees the end.
    mutating func end(discardBuffered: Bool) -> EndAction {
        guard phase == .active else { return .none }
        phase = .ended
        sink = nil
        if discardBuffered {
            stats.discardedAtEnd += UInt64(bufferedNotifications)
            buffer.removeAll()
            bufferedNotifications = 0
            bufferedBytes = 0
        }
        let waiters = self.waiters
        self.waiters.removeAll()
        return .resumeWaitersWithEnd(waiters, firstEnd: true)
    }

    var statsSnapshot: SubscriptionStats {
        var snapshot = stats
        snapshot.buffered = UInt64(bufferedNotifications)
        snapshot.bufferedBytes = UInt64(bufferedBytes)
        return snapshot
    }
}

extension BusEvent {
    var isNotification: Bool {
        if case .notification = self { return true }
        return false
    }

    /// What a buffered notification counts against a byte bound; 0 for other events.
    var bufferedSize: Int {
        if case .notification(let notification) = self { return notification.bufferedSize }
        return 0
    }
}
