import NotificationBus
import Synchronization

/// A task-style consumer's subscription, owned by its view node rather than by the task: the bus
/// hands its events straight to a `ViewFeedStateMachine` (a `BusEventSink`: no pump task in
/// between), which serves one session per task run.
final class ViewFeedStorage: BusEventSink {
    /// The feed whose task run is the current task (set around each run by the host), so a state
    /// write is credited to the consumer that made it: an `onReceive` action or another feed of the
    /// same view writing state must not mark this feed's notification as handled.
    @TaskLocal static var running: ObjectIdentifier?

    let pattern: NamePattern
    let replay: ReplayPolicy
    private let subscription = Mutex<SinkSubscription?>(nil)
    private let state: Mutex<ViewFeedStateMachine>
    private let metrics: ViewMetricsRecorder
    /// The bus's `messagesDecoded`, which a typed consumer of this feed counts its decodes in.
    let decodeCounter: MessageDecodeCounter

    /// Subscribes to `pattern` now, so `bus.ready(pattern)` covers it (with `.retained`, once its
    /// current values were handed over, ahead of everything live). `buffering.capacity` bounds
    /// the queue of a visible consumer; beyond it the bus stops reading (back-pressure).
    /// `typed`: read as messages, so this bus's own typed posts come as values (no JSON made).
    /// `start`: `.retained` begins with the current values of the names it matches.
    init(
        bus: Bus, pattern: NamePattern, replay: ReplayPolicy, start: SubscriptionStart = .now, buffering: BufferingPolicy,
        typed: Bool = false, metrics: ViewMetricsRecorder
    ) throws(BusError) {
        self.pattern = pattern
        self.replay = replay
        self.state = Mutex(ViewFeedStateMachine(replay: replay, capacity: buffering.capacity))
        self.metrics = metrics
        self.decodeCounter = bus.messageDecodeCounter
        let retained = start == .retained
        let subscription =
            typed
            ? try bus.typedSubscribe(pattern, sink: self, retained: retained)
            : try bus.subscribe(pattern, sink: self, retained: retained)
        self.subscription.withLock { $0 = subscription }
    }

    /// The bus subscription's own counters.
    var subscriptionStats: SubscriptionStats { subscription.withLock { $0 }?.stats ?? SubscriptionStats() }

    // MARK: From the bus (on its I/O thread: never blocks)

    func receive(_ event: BusEvent) {
        var received = FeedMetricsDelta()
        if case .notification = event { received.received = 1 }
        let action = state.withLock { $0.receive(event) }
        switch action {
        case .resume(let continuation, let event, let delta):
            apply(delta.adding(received))
            continuation.resume(returning: event)
        case .queued:
            apply(received)
        case .handledWhileInactive(let delta):
            apply(delta.adding(received))
        }
    }

    var isFull: Bool { state.withLock { $0.isFullForProducer() } }

    func finish() {
        let waiting = state.withLock { $0.sourceDidEnd() }
        waiting?.resume(returning: nil)
    }

    private func resumeProducer() {
        subscription.withLock { $0 }?.resumeReading()
    }

    // MARK: Consumer

    /// The next event for `session`, or nil once that session is over (hidden, restarted, destroyed, cancelled).
    func next(session: UInt64) async -> BusEvent? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<BusEvent?, Never>) in
                let action = state.withLock { $0.next(session: session, continuation) }
                switch action {
                case .event(let event, let resumeProducer, let delta):
                    apply(delta)
                    continuation.resume(returning: event)
                    if resumeProducer { self.resumeProducer() }
                case .end(let delta):
                    apply(delta)
                    continuation.resume(returning: nil)
                case .suspended(let delta):
                    apply(delta)
                }
            }
        } onCancel: {
            let waiting = state.withLock { $0.cancelWaiting(session: session) }
            waiting?.resume(returning: nil)
        }
    }

    /// Time a consumer spent on one notification, and whether it spent it on the main actor.
    func recordHandling(nanoseconds: UInt64, onMainActor: Bool) {
        metrics.update { metrics in
            metrics.handlingNanoseconds += nanoseconds
            if onMainActor { metrics.mainActorBusyNanoseconds += nanoseconds }
        }
    }

    /// The view's state changed: the publish time of the notification being handled, the first time.
    func noteStateUpdate() -> UInt64? {
        state.withLock { $0.noteStateUpdate() }
    }

    // MARK: Lifecycle (main actor, via the node)

    /// Starts a session for a new task run; kept notifications come first.
    func activate() -> UInt64 {
        state.withLock { $0.activate() }
    }

    /// Starts a new session for a restarted task run; it takes over what is queued.
    func restart() -> UInt64 {
        let (session, waiting, delta) = state.withLock { $0.restart() }
        apply(delta)
        waiting?.resume(returning: nil)
        return session
    }

    /// Ends the current session; what is not taken is kept or counted per the replay policy.
    func deactivate() {
        let (waiting, resume, delta) = state.withLock { $0.deactivate() }
        apply(delta)
        waiting?.resume(returning: nil)
        if resume { resumeProducer() }
    }

    /// The task run of `session` returned while its view is visible: nobody takes what comes now.
    func runFinished(session: UInt64) {
        let (waiting, resume, delta) = state.withLock { $0.runFinished(session: session) }
        apply(delta)
        waiting?.resume(returning: nil)
        if resume { resumeProducer() }
    }

    /// A typed consumer of this feed could not decode a notification.
    func noteUndecodable() {
        metrics.update { $0.undecodable += 1 }
    }

    /// The view is gone: ends every session and releases the bus subscription.
    func close() {
        let (waiting, resume, delta) = state.withLock { $0.end() }
        apply(delta)
        waiting?.resume(returning: nil)
        if resume { resumeProducer() }
        subscription.withLock { $0 }?.cancel()
    }

    private func apply(_ delta: FeedMetricsDelta) {
        guard !delta.isEmpty else { return }
        metrics.update { metrics in
            metrics.feedReceived += delta.received
            metrics.messagesHandled += delta.handled
            metrics.messagesFiltered += delta.filtered
            metrics.missedWhileHidden += delta.missed
            metrics.replayed += delta.replayed
            metrics.gapsDelivered += delta.gaps
        }
    }
}
