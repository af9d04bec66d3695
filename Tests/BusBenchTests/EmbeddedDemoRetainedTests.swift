import BusBench
import Synchronization
import Testing

/// `nbus demo --quick` (issue 39, demo): a view that appears after the last post shows the
/// current value at once with `start: .retained`, and says so; one with `.now` shows nothing
/// until the next change, which both then show.
@Suite("nbus demo --quick: a view that appears after the last post", .timeLimit(.minutes(1)))
struct EmbeddedDemoRetainedTests {
    @Test("start: .retained shows the current value at once, marked; start: .now nothing until the change")
    func retainedViewShowsCurrentValue() async throws {
        let lines = Mutex<[String]>([])
        try await EmbeddedDemo.run(count: 2) { line in lines.withLock { $0.append(line) } }
        let printed = lines.withLock { $0 }
        #expect(printed.contains("posted demo.price.eur = 1.10 (retained), before any view exists"), "\(printed)")
        #expect(
            printed.contains(
                "a view appears: start: .retained shows 1.10 (current value, retained) at once; start: .now shows nothing until the next change"),
            "\(printed)")
        #expect(
            printed.contains("a change: start: .retained shows 1.12 (a change); start: .now shows 1.12 (a change)"), "\(printed)")
    }
}
