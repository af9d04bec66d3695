import BusViews
import Foundation
import NotificationBus
import Synchronization

/// What the demo's retained-views step measured (issue 39, item 7): a publisher process posted a
/// retained price before any view existed; a host process then showed two views of it, one with
/// `start: .retained` and one with the default start (`.now`); later the publisher changed it.
package struct RetainedViewsResult: Codable, Sendable, Equatable {
    package var event = "retained-views"
    /// The name, the value posted before the views appeared, and the later change.
    package var name: String
    package var currentValue: String
    package var changedValue: String
    /// The pause between the views being ready and the change (the publisher's pace).
    package var changeDelayNanoseconds: UInt64
    /// Wall clock (same machine): the retained post, the views' appearance (mounted), the change.
    package var postedWallNanoseconds: UInt64
    package var appearedWallNanoseconds: UInt64
    package var changeWallNanoseconds: UInt64
    /// Each view's first value: what it showed, whether it was marked retained, when.
    package var retainedView: FirstShown
    package var defaultView: FirstShown

    package struct FirstShown: Codable, Sendable, Equatable {
        package var value: String
        package var isRetained: Bool
        package var wallNanoseconds: UInt64
    }

    /// From the views' appearance to each one's first value.
    package var retainedFirstNanoseconds: Int64 { Self.delta(retainedView.wallNanoseconds, appearedWallNanoseconds) }
    package var defaultFirstNanoseconds: Int64 { Self.delta(defaultView.wallNanoseconds, appearedWallNanoseconds) }
    /// From the change being posted to the default view showing it.
    package var defaultAfterChangeNanoseconds: Int64 { Self.delta(defaultView.wallNanoseconds, changeWallNanoseconds) }

    /// The retained view showed the current value, marked retained, before the next post; the
    /// default one showed nothing until that post (its first value is the change).
    package var holds: Bool {
        retainedView.isRetained && retainedView.value == currentValue
            && retainedView.wallNanoseconds < changeWallNanoseconds
            && !defaultView.isRetained && defaultView.value == changedValue
            && defaultView.wallNanoseconds >= changeWallNanoseconds
    }

    private static func delta(_ a: UInt64, _ b: UInt64) -> Int64 {
        a >= b ? Int64(clamping: a - b) : -Int64(clamping: b - a)
    }

    /// The lines of the text summary (and of the page's paragraph).
    package var lines: [String] {
        func ms(_ ns: Int64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
        return [
            "Retained views: \(name) = \(currentValue) posted retained by the publisher process before any view existed; "
                + "then a host process showed two views of it; \(ms(Int64(clamping: changeDelayNanoseconds))) after they "
                + "were ready the publisher changed it to \(changedValue).",
            "  start: .retained  first value \(retainedView.value)\(retainedView.isRetained ? " (retained)" : "") "
                + "\(ms(retainedFirstNanoseconds)) after it appeared"
                + (retainedView.wallNanoseconds < changeWallNanoseconds ? ", before the next post" : ", NOT before the next post"),
            "  start: .now       first value \(defaultView.value)\(defaultView.isRetained ? " (retained)" : "") "
                + "\(ms(defaultFirstNanoseconds)) after it appeared: it waited for the next change "
                + "(shown \(ms(defaultAfterChangeNanoseconds)) after that post)",
        ]
    }
}

/// The demo's retained-views step: two child processes (`views-worker retainedPublisher` and
/// `retainedHost`), about `changeDelay` plus startup long.
enum RetainedViewsDemo {
    static let name = "bench.views.price.eur"
    static let pattern: NamePattern = "bench.views.price.eur"
    static let currentValue = "1.10"
    static let changedValue = "1.12"
    static let changeDelay: Duration = .milliseconds(400)
    /// The stdin line that tells the publisher it may end.
    static let stopLine = "stop"

    /// Runs the two processes; the publisher's ready output is read before the host starts, so
    /// the views appear after the last post of the name.
    static func run(
        nbusExecutable: String, workerCommand: [String], group: ChildGroup, folder: String, progress: @Sendable (String) -> Void
    ) async throws -> RetainedViewsResult {
        let endpoint = "ipc://\(folder)/retained-views.sock"
        let timeout = Duration.seconds(60)
        var scenario = ViewsScenario()
        scenario.transport = .ipc
        let publisher = try await group.start(
            label: "retained-views publisher", executable: nbusExecutable,
            arguments: ViewsWorkerOptions(scenario: scenario, role: .retainedPublisher, endpoint: endpoint)
                .arguments(command: workerCommand),
            timeout: timeout)
        guard let postedLine = await publisher.waitForLine(where: { $0.contains(#""event":"posted""#) }),
            let posted = ChildProcess.decode(PostedLine.self, postedLine)
        else { throw failed(publisher, "before posting the retained value") }
        let host = try await group.start(
            label: "retained-views host", executable: nbusExecutable,
            arguments: ViewsWorkerOptions(scenario: scenario, role: .retainedHost, endpoint: posted.endpoint)
                .arguments(command: workerCommand),
            timeout: timeout)
        guard await host.waitForLine(where: { $0.contains(#""event":"ready""#) }) != nil else {
            publisher.kill()
            throw failed(host, "before its views were ready")
        }
        publisher.writeLine(ViewsWorker.goLine)
        guard let changedLine = await publisher.waitForLine(where: { $0.contains(#""event":"changed""#) }),
            let changed = ChildProcess.decode(ChangedLine.self, changedLine)
        else {
            host.kill()
            throw failed(publisher, "before posting the change")
        }
        let hostEnd = await host.waitForExit()
        publisher.writeLine(stopLine)
        let publisherEnd = await publisher.waitForExit()
        guard hostEnd.succeeded else { throw failed(host, hostEnd.description) }
        guard publisherEnd.succeeded else { throw failed(publisher, publisherEnd.description) }
        var result = try host.requireResult(RetainedViewsResult.self, event: "retained-views")
        result.postedWallNanoseconds = posted.wallNanoseconds
        result.changeWallNanoseconds = changed.wallNanoseconds
        for line in result.lines { progress(line) }
        return result
    }

    private static func failed(_ child: ChildProcess, _ what: String) -> BenchError {
        .childFailed(label: child.label, status: what, stderr: child.stderrText)
    }

    struct PostedLine: Codable, Sendable {
        var event = "posted"
        var endpoint: String
        var wallNanoseconds: UInt64
    }

    struct ChangedLine: Codable, Sendable {
        var event = "changed"
        var wallNanoseconds: UInt64
    }

    /// The publisher process: binds, posts the retained value, says so; once told `go` (the
    /// views are ready) waits `changeDelay` and posts the change; ends when told `stop`.
    static func publish(endpoint: String, go: () async -> Bool, stop: () async -> Void) async throws {
        let bus = try Bus(.directPublisher(bind: endpoint))
        let name = try NotificationName(Self.name)
        try await bus.post(name: name, payload: Array(currentValue.utf8), retain: true)
        WorkerProcess.emitJSON(
            PostedLine(endpoint: bus.endpoints.first ?? endpoint, wallNanoseconds: Timestamps.wallClockNanoseconds()))
        guard await go() else {
            _ = await bus.close()
            throw CancellationError()
        }
        // The scenario's pace (the next change comes later), not synchronisation.
        try await Task.sleep(for: changeDelay)
        let changeWall = Timestamps.wallClockNanoseconds()
        try await bus.post(name: name, payload: Array(changedValue.utf8), retain: true)
        WorkerProcess.emitJSON(ChangedLine(wallNanoseconds: changeWall))
        await stop()
        _ = await bus.close()
    }

    /// The host process: connects, shows the two views (they appear now, after the post), waits
    /// until they are subscribed (`ready`), says so, and reports once both show the change.
    @MainActor
    static func host(endpoint: String, ready: () -> Void) async throws -> RetainedViewsResult {
        let bus = try Bus(.directSubscriber(connect: [endpoint]))
        let shown = FirstValues()
        let host = ViewHost(bus: bus)
        let appeared = Timestamps.wallClockNanoseconds()
        host.mount(
            RetainedPricePair(
                retained: { shown.record(\.retained, $0) }, now: { shown.record(\.now, $0) }, changed: { shown.changed() }))
        try await bus.ready(pattern)
        ready()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        // Polled: the views' actions run on this actor and say nothing else when they have run.
        while shown.changes < 2, clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        host.unmount()
        _ = await bus.close()
        let values = shown.values
        guard shown.changes >= 2, let retained = values.retained, let now = values.now else {
            throw BenchError.setupFailed("the retained-views host's views showed \(values) within 20 s")
        }
        return RetainedViewsResult(
            name: Self.name, currentValue: currentValue, changedValue: changedValue,
            changeDelayNanoseconds: UInt64(changeDelay.components.seconds) * 1_000_000_000
                + UInt64(changeDelay.components.attoseconds / 1_000_000_000),
            postedWallNanoseconds: 0, appearedWallNanoseconds: appeared, changeWallNanoseconds: 0,
            retainedView: retained, defaultView: now)
    }
}

/// The first value each of the two views showed, and how many of them have shown the change.
private final class FirstValues: Sendable {
    struct Values: Sendable {
        var retained: RetainedViewsResult.FirstShown?
        var now: RetainedViewsResult.FirstShown?
        var changes = 0
    }

    private let state = Mutex(Values())

    var values: Values { state.withLock { $0 } }
    var changes: Int { state.withLock { $0.changes } }

    func record(_ view: WritableKeyPath<Values, RetainedViewsResult.FirstShown?> & Sendable, _ shown: RetainedViewsResult.FirstShown) {
        state.withLock { if $0[keyPath: view] == nil { $0[keyPath: view] = shown } }
    }

    func changed() { state.withLock { $0.changes += 1 } }
}

/// Two views of the price: one with `start: .retained`, one with the default start.
@MainActor
private struct RetainedPricePair: View {
    let retained: @Sendable (RetainedViewsResult.FirstShown) -> Void
    let now: @Sendable (RetainedViewsResult.FirstShown) -> Void
    let changed: @Sendable () -> Void

    var body: ViewContent {
        ViewContent {
            Child("retained") { RetainedPriceLabel(start: .retained, show: retained, changed: changed) }
            Child("now") { RetainedPriceLabel(start: .now, show: now, changed: changed) }
        }
    }
}

@MainActor
private struct RetainedPriceLabel: View {
    let start: SubscriptionStart
    let show: @Sendable (RetainedViewsResult.FirstShown) -> Void
    let changed: @Sendable () -> Void

    var body: ViewContent {
        ViewContent().onReceive(RetainedViewsDemo.pattern, start: start) { notification in
            let value = String(decoding: notification.payload, as: UTF8.self)
            show(.init(value: value, isRetained: notification.isRetained, wallNanoseconds: Timestamps.wallClockNanoseconds()))
            if value == RetainedViewsDemo.changedValue { changed() }
        }
    }
}
