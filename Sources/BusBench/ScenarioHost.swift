import BusViews
import Foundation
import Histogram
import NotificationBus
import Synchronization

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
            if scenario.isTyped {
                switch style {
                case .onReceive: return TypedOnReceiveProbeView(pattern: pattern, buffering: buffering, probe: probe)
                case .taskMain: return TypedMainTaskProbeView(pattern: pattern, buffering: buffering, probe: probe)
                case .taskOffMain:
                    return TypedOffMainTaskProbeView(pattern: pattern, replay: .none, buffering: buffering, probe: probe)
                case .taskReplay:
                    return TypedOffMainTaskProbeView(pattern: pattern, replay: replay, buffering: buffering, probe: probe)
                }
            }
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
