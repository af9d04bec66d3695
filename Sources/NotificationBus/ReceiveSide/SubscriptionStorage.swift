#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One subscription's shared state: the I/O thread appends batches, consumers (usually one task)
/// take events.
/// A `SubscriptionStateMachine` behind a `Mutex`; actions run outside the lock.
@usableFromInline
final class SubscriptionStorage: Sendable {
    let id: UInt64
    let pattern: NamePattern
    /// `Bus.subscribe(_:sink:)`: events go straight to the sink (held by the state machine until
    /// the subscription ends, so a sink that holds its subscription is no cycle), not to a buffer.
    let isSink: Bool
    /// A typed subscription: takes a looped-back typed post's value as it is (`LocalMessageValue`);
    /// any other gets the post's JSON.
    let takesLocalValues: Bool
    private let state: Mutex<SubscriptionStateMachine>
    /// Typed consumers: notifications that did not decode as the message type (counted by the
    /// consumer, which decodes; never by the I/O thread).
    private let undecodable = Atomic<UInt64>(0)
    /// How the storage reaches the I/O thread: unsubscribe when it ends, resume reading when it drains.
    let core: BusCore
    /// The subscription asked for its pattern's retained values (NBP-1 §18): their delivery.
    let retained: RetainedDelivery?
    /// The subscription ends once its retained values were handed over (`nbus subscribe
    /// --retained-only`): what it buffered is the current state.
    let endsAfterRetained: Bool

    init(
        id: UInt64, pattern: NamePattern, policy: BufferingPolicy, byteLimit: Int = 0, core: BusCore,
        sink: (any BusEventSink)? = nil, retained: Bool = false, endsAfterRetained: Bool = false,
        takesLocalValues: Bool = false
    ) {
        self.retained = retained || endsAfterRetained ? RetainedDelivery() : nil
        self.endsAfterRetained = endsAfterRetained
        self.id = id
        self.takesLocalValues = takesLocalValues
        self.pattern = pattern
        self.isSink = sink != nil
        self.state = Mutex(SubscriptionStateMachine(policy: policy, byteLimit: byteLimit, sink: sink))
        self.core = core
    }

    // MARK: Called by the I/O thread

    /// Appends one batch under one lock, resuming the consumer at most once. Returns the room
    /// left (`SubscriptionStateMachine.room`), read under that same lock: exhausted, the I/O
    /// thread stops reading (suspendProducer and full, or a full sink); otherwise its next round
    /// reads no more than that.
    func append(_ batch: inout SubscriptionBatch) -> ReadingRoom {
        if isSink {
            guard let sink = state.withLock({ $0.recordHandedToSink(batch) }) else { return .unbounded }
            while let event = batch.events.popFirst() { sink.receive(event) }
            return sink.isFull ? .none : .unbounded
        }
        let (action, room) = state.withLock { machine in
            (machine.append(&batch), machine.room)
        }
        Self.run(action)
        return room
    }

    /// The room left now (a sink: none while it is full, else unbounded).
    var room: ReadingRoom {
        if isSink { return (state.withLock({ $0.sink })?.isFull ?? false) ? .none : .unbounded }
        return state.withLock { $0.room }
    }

    /// Whether this subscription still wants the I/O thread paused.
    var wantsProducerPaused: Bool { room.isExhausted }

    /// A sink has room again: the I/O thread may read (it re-checks every subscription).
    func sinkHasRoom() {
        core.wakeToResumeReading()
    }

    /// The bus closed: let the consumer drain what is buffered, then end.
    func finishFromBus() {
        if isSink {
            let sink = state.withLock { machine in
                defer { _ = machine.end(discardBuffered: false) }
                return machine.sink
            }
            sink?.finish()
            return
        }
        let action = state.withLock { $0.end(discardBuffered: false) }
        if case .resumeWaitersWithEnd(let waiters, _) = action {
            for waiter in waiters { waiter.resume(returning: nil) }
        }
    }

    private static func run(_ action: SubscriptionStateMachine.AppendAction) {
        switch action {
        case .none: break
        case .resume(let continuation, let event): continuation.resume(returning: event)
        case .resumeMany(let resumed): for (continuation, event) in resumed { continuation.resume(returning: event) }
        }
    }

    // MARK: Called by the consumer

    /// Fills `local` (empty on entry) with the next events: everything buffered, under one lock,
    /// or, when nothing is buffered, the first event to arrive. Returns false at the end.
    nonisolated(nonsending) func refill(_ local: inout EventQueue) async -> Bool {
        if take(into: &local) { return true }
        // Low-latency setting: look again for a while (yielding the thread) before suspending,
        // so an event arriving meanwhile needs no task wake-up. Holds a cooperative thread.
        // Never on the bus's own thread (a task on `bus.executor`): that thread delivers the events.
        if core.idleSpinNanoseconds > 0 && !core.isOnIOThread {
            let deadline = Timestamps.monotonicNanoseconds() + core.idleSpinNanoseconds
            while Timestamps.monotonicNanoseconds() < deadline && !Task.isCancelled && !isEnded {
                sched_yield()
                if take(into: &local) { return true }
            }
        }
        let event = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<BusEvent?, Never>) in
                let action = state.withLock { $0.next(continuation) }
                switch action {
                case .returnEvent(let event, let resumeProducer):
                    continuation.resume(returning: event)
                    if resumeProducer { core.wakeToResumeReading() }
                case .returnEnd:
                    continuation.resume(returning: nil)
                case .suspended:
                    break
                }
            }
        } onCancel: {
            cancel()
        }
        guard let event else { return false }
        local.append(event)
        return true
    }

    /// Moves what is buffered into `local` without waiting; wakes the I/O thread if it may read again.
    private func take(into local: inout EventQueue) -> Bool {
        let (moved, resume) = state.withLock { $0.takeAll(into: &local) }
        if resume { core.wakeToResumeReading() }
        return moved
    }

    /// An iterator went away holding events it had taken but not used: back to the buffer for
    /// the next iterator while the subscription lives, else discarded and counted.
    func returnUndelivered(_ events: inout EventQueue) {
        guard !events.isEmpty else { return }
        let action = state.withLock { $0.returnUndelivered(&events) }
        Self.run(action)
    }

    /// Ends the subscription from the consumer's side and unsubscribes at the I/O thread.
    func cancel() {
        let action = state.withLock { $0.end(discardBuffered: true) }
        guard case .resumeWaitersWithEnd(let waiters, let firstEnd) = action else { return }
        for waiter in waiters { waiter.resume(returning: nil) }
        if firstEnd { core.enqueue(.removeSubscription(id)) }
    }

    var stats: SubscriptionStats {
        var stats = state.withLock { $0.statsSnapshot }
        stats.undecodable = undecodable.load(ordering: .relaxed)
        return stats
    }

    /// A typed consumer could not decode a delivered notification.
    func noteUndecodable() {
        undecodable.add(1, ordering: .relaxed)
    }

    var isEnded: Bool { state.withLock { $0.phase == .ended } }
}
