import BusViews
import Foundation
import Histogram
import NotificationBus
import Synchronization

/// What one view's own code saw, written from wherever the code runs (main actor or not).
/// Sequence numbers count per (publisher, name), so they are tracked per name the view subscribes to.
final class ViewProbe: Sendable {
    struct Counts: Sendable {
        var delivered: UInt64 = 0
        var matched: UInt64 = 0
        var firstSequence: UInt64 = 0
        /// Per subscribed name (the probe's `names` order), the highest sequence number seen.
        var lastSequences: [UInt64]
        var skipped: UInt64 = 0
        var outOfOrder: UInt64 = 0
        var inBandHidden: UInt64 = 0
        var inBandUpstream: UInt64 = 0
        var inBandLocal: UInt64 = 0
        /// Notifications of a name the view did not subscribe to (none expected).
        var foreign: UInt64 = 0

        /// The highest sequence number seen on any name.
        var lastSequence: UInt64 { lastSequences.max() ?? 0 }
    }

    private let state: Mutex<Counts>
    /// Slot of each subscribed name in `lastSequences`; empty for a single name (always slot 0).
    private let slots: [NotificationName: Int]
    /// The host's latency of the current sampling interval (shared by its views).
    private let interval: IntervalLatency?

    init(names: [NotificationName], interval: IntervalLatency? = nil) {
        state = Mutex(Counts(lastSequences: [UInt64](repeating: 0, count: max(1, names.count))))
        slots = names.count > 1 ? Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, $0.offset) }) : [:]
        self.interval = interval
    }

    /// The view's state was updated because of `notification` (onReceive: its action ran): one
    /// publish-to-state-update sample for the time series, timed like the runtime's own histogram.
    func stateUpdated(by notification: BusNotification) {
        interval?.record(publishedAt: notification.timestamp)
    }

    /// Counts a notification handed to the view's code; returns whether it passes the condition.
    func note(_ notification: BusNotification) -> Bool {
        let matched = notification.payload.first == 1
        let sequence = notification.sequence
        let slot = slots.isEmpty ? 0 : slots[notification.name]
        state.withLock { counts in
            counts.delivered += 1
            if matched { counts.matched += 1 }
            guard let slot else {
                counts.foreign += 1
                return
            }
            if counts.firstSequence == 0 { counts.firstSequence = sequence }
            let last = counts.lastSequences[slot]
            if sequence <= last {
                counts.outOfOrder += 1
            } else {
                counts.skipped += sequence - last - 1
                counts.lastSequences[slot] = sequence
            }
        }
        return matched
    }

    /// Counts a gap event handed to a task-style loop.
    func note(_ gap: Gap) {
        state.withLock { counts in
            switch gap.cause {
            case .missedWhileInactive: counts.inBandHidden += gap.count
            case .lostUpstream: counts.inBandUpstream += gap.count
            case .droppedLocalBuffer: counts.inBandLocal += gap.count
            }
        }
    }

    var counts: Counts { state.withLock { $0 } }
}

// MARK: The views

/// `onReceive`: the action runs on the main actor for every notification, and `body` is
/// re-evaluated after it, whether or not the action wrote state.
struct OnReceiveProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().onReceive(pattern, buffering: buffering) { notification in
            if probe.note(notification) { value.wrappedValue = notification.sequence }
            probe.stateUpdated(by: notification)
        }
    }
}

/// `task` with the loop written in `body`: it inherits the main actor.
struct MainTaskProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, buffering: buffering) { feed in
            for await event in feed {
                switch event {
                case .notification(let notification):
                    if probe.note(notification) {
                        value.wrappedValue = notification.sequence
                        probe.stateUpdated(by: notification)
                    }
                case .gap(let gap):
                    probe.note(gap)
                }
            }
        }
    }
}

/// `task` with a `nonisolated` handler declared outside `body` (the article's fix): the loop runs
/// off the main actor and hops to it only to write state for a match.
struct OffMainTaskProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let replay: ReplayPolicy
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, replay: replay, buffering: buffering, handle)
    }

    nonisolated func handle(_ feed: ViewFeed) async {
        for await event in feed {
            switch event {
            case .notification(let notification):
                if probe.note(notification) {
                    await value.projectedValue.set(notification.sequence)
                    probe.stateUpdated(by: notification)
                }
            case .gap(let gap):
                probe.note(gap)
            }
        }
    }
}

/// One tab of the scenario: a stack of views.
struct ScenarioPageView: View {
    let range: Range<Int>
    let leaf: @MainActor (Int) -> any View

    var body: ViewContent {
        ViewContent {
            for index in range {
                Child(ViewID("v-\(index)")) { leaf(index) }
            }
        }
    }
}

/// The root: the scenario's container holding `views` leaf views.
struct ScenarioRootView: View {
    let container: ViewContainer
    let views: Int
    let pages: [Range<Int>]
    let selection = State(wrappedValue: ViewID("tab-0"))
    let window: State<Range<Int>>
    let leaf: @MainActor (Int) -> any View

    init(container: ViewContainer, views: Int, pages: [Range<Int>], window: Range<Int>, leaf: @escaping @MainActor (Int) -> any View) {
        self.container = container
        self.views = views
        self.pages = pages
        self.window = State(wrappedValue: window)
        self.leaf = leaf
    }

    var body: ViewContent {
        switch container {
        case .none:
            return ViewContent {
                for index in 0..<views {
                    Child(ViewID("v-\(index)")) { leaf(index) }
                }
            }
        case .tabs:
            return .tabView(selection: selection.wrappedValue) {
                for (page, range) in pages.enumerated() {
                    Child(ViewID("tab-\(page)")) { ScenarioPageView(range: range, leaf: leaf) }
                }
            }
        case .list:
            return .lazyList(rowCount: views, window: window.wrappedValue) { index in
                Child(ViewID("v-\(index)")) { leaf(index) }
            }
        }
    }

    /// The path of view `index` in the host's tree.
    func path(ofView index: Int, page: Int) -> String {
        container == .tabs ? "root/tab-\(page)/v-\(index)" : "root/v-\(index)"
    }
}

// MARK: The host

/// A subscriber host: one process, one style, the scenario's views on a `ViewHost`.
///
/// Mounts the views (all of them exist before the publisher starts: a lazy list is scrolled over
/// every row once), waits for `bus.ready`, reports ready, churns visibility while the publisher
/// posts, and once it has the publisher's counts drains: first until its bus has seen every
/// notification (received or counted as lost upstream), then showing each page in turn until
/// its views have accounted for every notification (kept ones replayed, in-band gaps seen).
@MainActor
enum ScenarioHost {
    static func run(
        _ scenario: ViewsScenario, style: ViewStyle, endpoint: String,
        ready: () -> Void, published: @escaping @Sendable () async throws -> ScenarioPublisherResult
    ) async throws -> ScenarioHostResult {
        var configuration = BusConfiguration.directSubscriber(connect: [endpoint])
        configuration.sendHighWaterMark = scenario.highWaterMark
        configuration.receiveHighWaterMark = scenario.highWaterMark
        let bus = try Bus(configuration)
        let host = ViewHost(bus: bus, defaultBodyCost: .microseconds(scenario.bodyMicroseconds))
        let buffering = BufferingPolicy.suspendProducer(capacity: scenario.buffer)
        let names = try (0..<scenario.names).map { try NotificationName(scenario.notificationName($0)) }
        let patterns = try (0..<scenario.views).map { try scenario.pattern(ofView: $0) }
        let viewNames = (0..<scenario.views).map { scenario.nameIndexes(ofView: $0) }
        let interval = IntervalLatency()
        let probes = viewNames.map { indexes in ViewProbe(names: indexes.map { names[$0] }, interval: interval) }
        let replay = ReplayPolicy.all(max: scenario.replayMax)
        let leaf: @MainActor (Int) -> any View = { index in
            let pattern = patterns[index]
            let probe = probes[index]
            switch style {
            case .onReceive: return OnReceiveProbeView(pattern: pattern, buffering: buffering, probe: probe)
            case .taskMain: return MainTaskProbeView(pattern: pattern, buffering: buffering, probe: probe)
            case .taskOffMain:
                return OffMainTaskProbeView(pattern: pattern, replay: .none, buffering: buffering, probe: probe)
            case .taskReplay:
                return OffMainTaskProbeView(pattern: pattern, replay: replay, buffering: buffering, probe: probe)
            }
        }
        let pages = (0..<scenario.pageCount).map { scenario.views(onPage: $0) }
        // A lazy list makes a row the first time it is in its window: show every row once.
        let root = ScenarioRootView(
            container: scenario.container, views: scenario.views, pages: pages,
            window: scenario.container == .list ? 0..<scenario.views : pages[0], leaf: leaf)
        host.mount(root)
        let visibility = Visibility(scenario: scenario, root: root)
        visibility.show(page: 0)
        guard host.subscriptionErrors.isEmpty else {
            throw BenchError.setupFailed("subscriptions failed: \(host.subscriptionErrors)")
        }
        var nodes: [ViewNode] = []
        for index in 0..<scenario.views {
            let path = root.path(ofView: index, page: scenario.page(ofView: index))
            guard let node = host.node(at: path) else { throw BenchError.setupFailed("no view at \(path)") }
            nodes.append(node)
        }
        // Readiness: every subscription made so far is live at the publisher.
        try await bus.ready(patterns[0], timeout: .seconds(scenario.startupSeconds))
        let baseline = nodes.map(\.metrics)
        let usageAtReady = ProcessUsage.current()
        let readyAt = Timestamps.monotonicNanoseconds()
        let pinger = MainActorPinger()
        if scenario.pingMainActor { pinger.start() }
        visibility.restartLog()
        let sampler = HostSampler(readers: nodes.map(\.reader), probes: probes, interval: interval, isTask: style.isTask)
        sampler.start()
        ready()

        let churn: Task<Void, Never>? =
            scenario.hasChurn
            ? Task { @MainActor in
                var page = 0
                while !Task.isCancelled {
                    // Pacing; cancelled when the run ends, which the check below sees.
                    try? await Task.sleep(for: .milliseconds(scenario.churnMilliseconds))
                    if Task.isCancelled { break }
                    page = (page + 1) % scenario.pageCount
                    visibility.show(page: page)
                }
            } : nil
        let publisher = try await published()
        churn?.cancel()
        let transitionsWhilePosting = visibility.transitions(before: publisher.lastPostWallNanoseconds)

        // Drain.
        let drainStart = Timestamps.monotonicNanoseconds()
        let deadline = drainStart + UInt64(scenario.drainSeconds) * 1_000_000_000
        let stall = UInt64(scenario.stallSeconds) * 1_000_000_000
        let expected = viewNames.map { indexes -> UInt64 in
            indexes.reduce(0) { $0 + ($1 < publisher.postedPerName.count ? publisher.postedPerName[$1] : 0) }
        }
        func stats(_ index: Int) -> SubscriptionStats { nodes[index].subscriptionStats.first ?? SubscriptionStats() }
        func seenByBus(_ index: Int) -> Bool {
            let stats = stats(index)
            return stats.received + stats.lostUpstream >= expected[index]
        }
        func drained(_ index: Int) -> Bool {
            let stats = stats(index)
            let counts = probes[index].counts
            let metrics = nodes[index].metrics
            let hidden = style.isTask ? metrics.missedWhileHidden : 0
            let accounted = counts.delivered + stats.lostUpstream + stats.droppedLocalBuffer + hidden + stats.discardedAtEnd
            guard accounted == expected[index] else { return false }
            guard style.isTask else { return true }
            return counts.inBandHidden == metrics.missedWhileHidden && counts.inBandUpstream == stats.lostUpstream
        }
        func progress() -> UInt64 {
            var total: UInt64 = 0
            for index in 0..<scenario.views {
                let stats = stats(index)
                let counts = probes[index].counts
                total &+= stats.received &+ stats.lostUpstream &+ counts.delivered &+ counts.inBandHidden
                total &+= nodes[index].metrics.missedWhileHidden
            }
            return total
        }
        var complete = await waitUntil(deadline: deadline, stall: stall, progress: progress) {
            (0..<scenario.views).allSatisfy(seenByBus)
        }
        let startPage = visibility.current
        for step in 0..<scenario.pageCount {
            let page = (startPage + step) % scenario.pageCount
            visibility.show(page: page)
            let onPage = scenario.views(onPage: page)
            complete =
                await waitUntil(deadline: deadline, stall: stall, progress: progress) { onPage.allSatisfy(drained) }
                && complete
        }
        complete =
            await waitUntil(deadline: deadline, stall: stall, progress: progress) {
                (0..<scenario.views).allSatisfy(drained)
            } && complete
        let drainEnd = Timestamps.monotonicNanoseconds()
        let timeline = await sampler.stop()
        let ping = await pinger.stop()
        let usage = ProcessUsage.current()

        var counters: [ScenarioViewCounters] = []
        var total = ViewMetrics()
        for index in 0..<scenario.views {
            let metrics = nodes[index].metrics
            total.add(metrics)
            let before = baseline[index]
            let counts = probes[index].counts
            let stats = stats(index)
            var view = ScenarioViewCounters(
                view: index, name: scenario.nameIndex(ofView: index), page: scenario.page(ofView: index),
                names: viewNames[index])
            view.delivered = counts.delivered
            view.matched = counts.matched
            view.firstSequence = counts.firstSequence
            view.lastSequence = counts.lastSequence
            view.lastSequences = counts.lastSequences
            view.outOfOrder = counts.outOfOrder + counts.foreign
            view.skippedSequences = counts.skipped
            view.inBandHidden = counts.inBandHidden
            view.inBandUpstream = counts.inBandUpstream
            view.inBandLocal = counts.inBandLocal
            view.received = stats.received
            view.lostUpstream = stats.lostUpstream
            view.droppedLocalBuffer = stats.droppedLocalBuffer
            view.discardedAtEnd = stats.discardedAtEnd
            view.buffered = stats.buffered
            view.bodyEvaluations = metrics.bodyEvaluations &- before.bodyEvaluations
            view.stateUpdates = metrics.stateUpdates &- before.stateUpdates
            view.messagesHandled = metrics.messagesHandled &- before.messagesHandled
            view.missedWhileHidden = metrics.missedWhileHidden &- before.missedWhileHidden
            view.replayed = metrics.replayed &- before.replayed
            view.mainActorBusyNanoseconds = metrics.mainActorBusyNanoseconds &- before.mainActorBusyNanoseconds
            view.handlingNanoseconds = metrics.handlingNanoseconds &- before.handlingNanoseconds
            view.appearances = metrics.appearances &- before.appearances
            view.disappearances = metrics.disappearances &- before.disappearances
            view.hiddenNanoseconds = visibility.hiddenNanoseconds(
                page: view.page, from: publisher.firstPostWallNanoseconds, to: publisher.lastPostWallNanoseconds)
            counters.append(view)
        }
        let busStats = bus.stats
        host.unmount()
        await bus.close()
        return ScenarioHostResult(
            style: style, views: counters, latency: LatencySummary(total.latency), windowNanoseconds: drainEnd - readyAt,
            mainActorPing: ping,
            windowUserNanoseconds: usage.user &- usageAtReady.user, windowSystemNanoseconds: usage.system &- usageAtReady.system,
            totalUserNanoseconds: usage.user, totalSystemNanoseconds: usage.system, peakResidentKiB: usage.maxResidentKiB,
            churnTransitions: transitionsWhilePosting, drainIncomplete: !complete, drainNanoseconds: drainEnd - drainStart,
            subscriptionErrors: host.subscriptionErrors.map { "\($0)" }, endOfStreamRecords: busStats.endOfStreamRecords,
            subscription: scenario.subscription, framesReceived: busStats.notificationsReceived, timeline: timeline,
            visibilityChanges: visibility.changeTimes(limit: 20_000))
    }

    /// Polls `condition` every 5 ms (the main actor stays free meanwhile); false when the deadline
    /// passes or `progress` stays the same for `stall` ns first.
    private static func waitUntil(
        deadline: UInt64, stall: UInt64, progress: () -> UInt64, _ condition: () -> Bool
    ) async -> Bool {
        var last = progress()
        var lastChange = Timestamps.monotonicNanoseconds()
        while true {
            if condition() { return true }
            let now = Timestamps.monotonicNanoseconds()
            if now >= deadline { return false }
            let current = progress()
            if current != last {
                last = current
                lastChange = now
            } else if now - lastChange >= stall {
                return false
            }
            // A poll of counters with no signal to await; a cancelled sleep returns at once and the
            // deadline above still ends the loop.
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// Publish-to-state-update latencies of one sampling interval, shared by a host's views.
final class IntervalLatency: Sendable {
    private let histogram = Mutex(
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .two))

    func record(publishedAt timestamp: UInt64) {
        let now = Timestamps.wallClockNanoseconds()
        let latency = max(1, min(now >= timestamp ? now - timestamp : 0, 600_000_000_000))
        histogram.withLock { _ = $0.record(latency) }
    }

    /// The interval's count, p50 and p99, and a fresh interval.
    func take() -> (count: UInt64, p50: UInt64, p99: UInt64) {
        histogram.withLock { histogram in
            defer { histogram.reset() }
            guard histogram.totalCount > 0 else { return (0, 0, 0) }
            return (histogram.totalCount, histogram.valueAtPercentile(50), histogram.valueAtPercentile(99))
        }
    }
}

/// Samples a host's counters every 250 ms from a task off the main actor (so a saturated main
/// actor delays no sample): what the views' code got, the losses by cause, main-actor busy time.
final class HostSampler: Sendable {
    static let intervalMilliseconds = 250
    /// At most this many samples (about 40 minutes at 4 a second): memory stays bounded.
    static let limit = 10_000

    private let readers: [ViewNodeReader]
    private let probes: [ViewProbe]
    private let interval: IntervalLatency
    private let isTask: Bool
    private let state = Mutex<(samples: [HostSample], task: Task<Void, Never>?)>(([], nil))

    init(readers: [ViewNodeReader], probes: [ViewProbe], interval: IntervalLatency, isTask: Bool) {
        self.readers = readers
        self.probes = probes
        self.interval = interval
        self.isTask = isTask
    }

    func start() {
        take()
        let task = Task.detached { [self] in
            while !Task.isCancelled {
                // The sampling interval; cancelled on stop, which the check below sees.
                try? await Task.sleep(for: .milliseconds(Self.intervalMilliseconds))
                if Task.isCancelled { break }
                take()
            }
        }
        state.withLock { $0.task = task }
    }

    /// Stops sampling, takes a last sample, and returns them all.
    func stop() async -> [HostSample] {
        let task = state.withLock { $0.task.take() }
        task?.cancel()
        await task?.value
        take()
        return state.withLock { $0.samples }
    }

    private func take() {
        var sample = HostSample(wallNanoseconds: Timestamps.wallClockNanoseconds())
        for (reader, probe) in zip(readers, probes) {
            let metrics = reader.metrics
            sample.delivered += probe.counts.delivered
            sample.missedWhileHidden += isTask ? metrics.missedWhileHidden : 0
            sample.replayed += metrics.replayed
            sample.mainActorBusyNanoseconds += metrics.mainActorBusyNanoseconds
            for stats in reader.subscriptionStats {
                sample.lostUpstream += stats.lostUpstream
                sample.droppedLocalBuffer += stats.droppedLocalBuffer
            }
        }
        let latency = interval.take()
        sample.latencyCount = latency.count
        sample.latencyP50 = latency.p50
        sample.latencyP99 = latency.p99
        state.withLock { state in
            if state.samples.count < Self.limit { state.samples.append(sample) }
        }
    }
}

/// Measures the main actor's responsiveness: every 20 ms, from a detached task, how long a job
/// enqueued on the main actor waits before it runs.
final class MainActorPinger: Sendable {
    private let histogram = Mutex(
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .three))
    private let task = Mutex<Task<Void, Never>?>(nil)

    func start() {
        let started = Task.detached { [self] in
            while !Task.isCancelled {
                let sent = Timestamps.monotonicNanoseconds()
                let ran = await MainActor.run { Timestamps.monotonicNanoseconds() }
                histogram.withLock { _ = $0.record(max(1, min(ran &- sent, 600_000_000_000))) }
                // The probe's interval; cancelled on stop, which ends the loop.
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops sampling and summarises.
    func stop() async -> LatencySummary {
        let running = task.withLock { $0.take() }
        running?.cancel()
        await running?.value
        return histogram.withLock { LatencySummary($0) }
    }
}

/// Which page is visible, and since when: drives the root's selection or window.
@MainActor
final class Visibility {
    let scenario: ViewsScenario
    let root: ScenarioRootView
    private(set) var current = 0
    /// (wall clock ns, page shown from then on).
    private var log: [(UInt64, Int)] = []

    init(scenario: ViewsScenario, root: ScenarioRootView) {
        self.scenario = scenario
        self.root = root
    }

    func show(page: Int) {
        current = page
        switch scenario.container {
        case .none: break
        case .tabs: root.selection.wrappedValue = ViewID("tab-\(page)")
        case .list: root.window.wrappedValue = scenario.views(onPage: page)
        }
        log.append((Timestamps.wallClockNanoseconds(), page))
    }

    /// Wall-clock times of the page changes since the log restarted (at most `limit`, the first ones).
    func changeTimes(limit: Int) -> [UInt64] {
        Array(log.dropFirst().prefix(limit).map(\.0))
    }

    /// Forgets the set-up transitions: the log starts with the current page, now.
    func restartLog() {
        log = [(Timestamps.wallClockNanoseconds(), current)]
    }

    /// Page changes made before `wall` (after the log's start).
    func transitions(before wall: UInt64) -> Int {
        max(0, log.filter { $0.0 <= wall }.count - 1)
    }

    /// Time `page` was not shown between `start` and `end` (wall clock ns).
    func hiddenNanoseconds(page: Int, from start: UInt64, to end: UInt64) -> UInt64 {
        guard end > start else { return 0 }
        guard scenario.container != .none else { return 0 }
        var visible: UInt64 = 0
        for (index, entry) in log.enumerated() where entry.1 == page {
            let from = max(entry.0, start)
            let to = min(index + 1 < log.count ? log[index + 1].0 : UInt64.max, end)
            if to > from { visible += to - from }
        }
        return (end - start) - min(visible, end - start)
    }
}
