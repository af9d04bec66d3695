import BusViews
import NotificationBus
import Synchronization
import TestSupport
import Testing

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

func text(_ notification: BusNotification) -> String { String(decoding: notification.payload, as: UTF8.self) }

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

extension ViewNode {
    /// `waitForMetrics`, bounded: after `timeout` an issue and the counters as they are, so the
    /// test's own checks fail too (the library's wait has no bound and ignores cancellation).
    @discardableResult
    func waitForMetrics(
        within timeout: Duration, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (ViewMetrics) -> Bool
    ) async -> ViewMetrics {
        if let metrics = await Task(operation: { await self.waitForMetrics(condition) }).value(orNilAfter: timeout) {
            return metrics
        }
        Issue.record("the view's metrics did not reach the condition within \(timeout): \(metrics)", sourceLocation: sourceLocation)
        return metrics
    }
}

extension AsyncAction {
    /// `waitUntilIdle`, bounded: after `timeout` an issue instead of a hang.
    func waitUntilIdle(within timeout: Duration, sourceLocation: SourceLocation = #_sourceLocation) async {
        if await Task(operation: { await self.waitUntilIdle() }).value(orNilAfter: timeout) == nil {
            Issue.record("the action was still running after \(timeout)", sourceLocation: sourceLocation)
        }
    }
}
