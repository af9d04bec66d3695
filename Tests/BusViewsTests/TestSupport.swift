import BusViews
import NotificationBus
import Synchronization
import Testing

/// A one-shot signal a test awaits; `fire()` is idempotent.
final class Gate: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Void>.makeStream()
    }

    func fire() { continuation.finish() }

    func wait() async {
        for await _ in stream {}
    }
}

/// Events appended from anywhere; a test awaits a condition on them (resumed by `append`, never polled).
final class EventLog<Event: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable ([Event]) -> Bool
        let continuation: CheckedContinuation<[Event], Never>
    }

    private let state = Mutex<(events: [Event], waiters: [Waiter])>(([], []))

    init() {}

    func append(_ event: Event) {
        let (ready, events) = state.withLock { state in
            state.events.append(event)
            var ready: [Waiter] = []
            let events = state.events
            state.waiters.removeAll { waiter in
                guard waiter.condition(events) else { return false }
                ready.append(waiter)
                return true
            }
            return (ready, events)
        }
        for waiter in ready { waiter.continuation.resume(returning: events) }
    }

    var events: [Event] { state.withLock { $0.events } }

    /// Returns the events once `condition` holds.
    @discardableResult
    func wait(until condition: @escaping @Sendable ([Event]) -> Bool) async -> [Event] {
        await withCheckedContinuation { (continuation: CheckedContinuation<[Event], Never>) in
            let ready: [Event]? = state.withLock { state in
                if condition(state.events) { return state.events }
                state.waiters.append(Waiter(condition: condition, continuation: continuation))
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Returns once at least `count` events were appended.
    @discardableResult
    func wait(count: Int) async -> [Event] {
        await wait { $0.count >= count }
    }
}

/// A flag set from one task and read from another (stops loops that ignore cancellation).
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// Suspends until the current task is cancelled (an `AsyncStream` iteration ends on cancellation).
func suspendUntilCancelled() async {
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    _ = continuation
    for await _ in stream {}
}

/// Busy work for `microseconds`, measured with the monotonic clock.
func spin(microseconds: UInt64) {
    let start = Timestamps.monotonicNanoseconds()
    while Timestamps.monotonicNanoseconds() &- start < microseconds * 1_000 {}
}

func text(_ notification: Notification) -> String { String(decoding: notification.payload, as: UTF8.self) }

/// A view that shows nothing and consumes nothing.
struct EmptyView: View {
    var body: ViewContent { ViewContent() }
}

/// A container whose only child is shown while `show` is true (`if show { child }`).
struct Conditional: View {
    @State var show = true
    let child: @MainActor () -> any View

    var body: ViewContent {
        ViewContent {
            if show { Child("content", child) }
        }
    }
}

/// A two-tab view: "content" holds the view under test, "elsewhere" shows nothing.
struct Switcher: View {
    @State var selection: ViewID = "content"
    let content: @MainActor () -> any View

    var body: ViewContent {
        .tabView(selection: selection) {
            Child("content", content)
            Child("elsewhere") { EmptyView() }
        }
    }
}

/// A counter read while the main actor is held (so it cannot be an `EventLog` wait).
final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .releasing) }
    var count: Int { value.load(ordering: .acquiring) }
}
