import Foundation

/// One style's figures, summed over its views, with the accounting identity checked per view.
public struct ViewsStyleSummary: Codable, Sendable {
    public var style: ViewStyle
    public var views: Int
    /// Notifications posted to the names the views subscribe to, summed over views.
    public var published: UInt64
    /// Of those, the ones that match the condition.
    public var publishedMatching: UInt64
    /// Reached the views' subscriptions in the host process.
    public var received: UInt64
    /// Handed to the views' code (the `onReceive` action, or a loop iteration), live or replayed.
    public var delivered: UInt64
    /// Delivered and passing the condition: the code wrote state.
    public var handled: UInt64
    /// State writes, as the runtime counted them.
    public var stateUpdates: UInt64
    /// `body` evaluations of the views after they were ready.
    public var bodyEvaluations: UInt64
    /// Main-actor busy time as the runtime accounts it (bodies, `onReceive` actions, a
    /// main-actor loop's handling), ns, and as a share of the host's window.
    public var mainActorBusyNanoseconds: UInt64
    public var mainActorBusyPercent: Double
    /// How long a job enqueued on the main actor waited to run (sampled every 20 ms), ns.
    public var mainActorPing: LatencySummary
    /// Publish to state update (onReceive: to the end of its action, every notification), ns.
    public var latency: LatencySummary
    // Losses by cause:
    public var lostUpstream: UInt64
    public var droppedLocalBuffer: UInt64
    public var missedWhileHidden: UInt64
    public var discardedAtEnd: UInt64
    /// Kept while hidden and delivered on reappear.
    public var replayed: UInt64
    /// Sequence numbers of the views' names never delivered to the views' code (counted from the
    /// sequence numbers the code saw, independently of the loss counters).
    public var unseenBySequence: UInt64
    /// Gap events the task loops were handed for misses while hidden, and for upstream loss.
    public var inBandHidden: UInt64
    public var inBandUpstream: UInt64
    /// Notifications delivered out of order or twice (none expected).
    public var outOfOrder: UInt64
    /// Expected misses from time alone: each view's published notifications times the share of
    /// the publishing window it was hidden.
    public var expectedHiddenByTime: Double
    /// Visibility changes while the publisher posted.
    public var churnTransitions: Int
    /// The host's CPU time (user + system) over its window, and its peak RSS.
    public var cpuNanoseconds: UInt64
    public var peakResidentKiB: UInt64
    /// Which names the views subscribed to, and the notification frames that reached the host's
    /// socket (what ZeroMQ did not filter out at the publisher).
    public var subscription: ViewSubscription
    public var framesReceived: UInt64
    /// The host's CPU time per frame that reached it, ns: the figure to hold against raw libzmq's
    /// subscriber CPU per message.
    public var cpuPerFrameNanoseconds: Double
    /// Delivered per second of the publishing window.
    public var deliveredPerSecond: Double
    /// The host's window (ready to drained) and drain, ns.
    public var windowNanoseconds: UInt64
    public var drainNanoseconds: UInt64
    public var drainIncomplete: Bool
    /// published == delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd,
    /// for every view.
    public var identityHolds: Bool
    /// The views for which it does not, described.
    public var identityFailures: [String]

    /// The right-hand side of the identity, summed.
    public var accounted: UInt64 { delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd }

    init(publisher: ScenarioPublisherResult, host: ScenarioHostResult, scenario: ViewsScenario) {
        style = host.style
        views = host.views.count
        var published: UInt64 = 0
        var matching: UInt64 = 0
        var unseen: UInt64 = 0
        var expectedHidden = 0.0
        var failures: [String] = []
        let window = Double(publisher.windowNanoseconds)
        for view in host.views {
            // Sequence numbers count per (publisher, name): a view on several names is checked per name.
            var posted: UInt64 = 0
            var problems: [String] = []
            for (name, last) in view.sequencesByName {
                let postedToName = name >= 0 && name < publisher.postedPerName.count ? publisher.postedPerName[name] : 0
                posted += postedToName
                matching += name >= 0 && name < publisher.matchingPerName.count ? publisher.matchingPerName[name] : 0
                unseen += postedToName > last ? postedToName - last : 0
                if last > postedToName { problems.append("sequence \(last) of name \(name) beyond the \(postedToName) published") }
            }
            published += posted
            unseen += view.skippedSequences
            if window > 0 { expectedHidden += Double(posted) * Double(view.hiddenNanoseconds) / window }
            if view.accounted != posted {
                problems.insert(
                    "published \(posted) != delivered \(view.delivered) + lostUpstream \(view.lostUpstream) + "
                        + "droppedLocalBuffer \(view.droppedLocalBuffer) + hidden \(view.missedWhileHidden) + "
                        + "discardedAtEnd \(view.discardedAtEnd) = \(view.accounted) (buffered \(view.buffered))", at: 0)
            }
            if view.outOfOrder > 0 { problems.append("\(view.outOfOrder) delivered out of order or twice") }
            if !problems.isEmpty { failures.append("view \(view.view): " + problems.joined(separator: "; ")) }
        }
        self.published = published
        publishedMatching = matching
        received = host.views.reduce(0) { $0 + $1.received }
        delivered = host.views.reduce(0) { $0 + $1.delivered }
        handled = host.views.reduce(0) { $0 + $1.matched }
        stateUpdates = host.views.reduce(0) { $0 + $1.stateUpdates }
        bodyEvaluations = host.views.reduce(0) { $0 + $1.bodyEvaluations }
        mainActorBusyNanoseconds = host.views.reduce(0) { $0 + $1.mainActorBusyNanoseconds }
        let hostWindow = Double(max(1, host.windowNanoseconds))
        mainActorBusyPercent = Double(mainActorBusyNanoseconds) / hostWindow * 100
        mainActorPing = host.mainActorPing
        latency = host.latency
        lostUpstream = host.views.reduce(0) { $0 + $1.lostUpstream }
        droppedLocalBuffer = host.views.reduce(0) { $0 + $1.droppedLocalBuffer }
        missedWhileHidden = host.views.reduce(0) { $0 + $1.missedWhileHidden }
        discardedAtEnd = host.views.reduce(0) { $0 + $1.discardedAtEnd }
        replayed = host.views.reduce(0) { $0 + $1.replayed }
        unseenBySequence = unseen
        inBandHidden = host.views.reduce(0) { $0 + $1.inBandHidden }
        inBandUpstream = host.views.reduce(0) { $0 + $1.inBandUpstream }
        outOfOrder = host.views.reduce(0) { $0 + $1.outOfOrder }
        expectedHiddenByTime = scenario.container == .none ? 0 : expectedHidden
        churnTransitions = host.churnTransitions
        cpuNanoseconds = host.windowUserNanoseconds + host.windowSystemNanoseconds
        peakResidentKiB = host.peakResidentKiB
        subscription = host.subscription
        framesReceived = host.framesReceived
        let frames = host.framesReceived > 0 ? host.framesReceived : received
        cpuPerFrameNanoseconds = frames == 0 ? 0 : Double(cpuNanoseconds) / Double(frames)
        let postSeconds = Double(max(1, publisher.postNanoseconds)) / 1e9
        deliveredPerSecond = Double(delivered) / postSeconds
        windowNanoseconds = host.windowNanoseconds
        drainNanoseconds = host.drainNanoseconds
        drainIncomplete = host.drainIncomplete
        if !failures.isEmpty && publisher.endOfStreamUnacknowledged > 0 && host.endOfStreamRecords == 0 {
            failures.append(
                "the publisher closed before \(publisher.endOfStreamUnacknowledged) host(s) acknowledged its end of stream "
                    + "and this host never saw it: what ZeroMQ still queued for it was discarded, uncounted (raise --drain-seconds)")
        }
        if !host.subscriptionErrors.isEmpty { failures.append("subscriptions failed: \(host.subscriptionErrors)") }
        identityHolds = failures.isEmpty
        identityFailures = failures
    }
}

/// One of the targets, evaluated on this run.
public struct ViewsTarget: Codable, Sendable {
    /// The target as the issue states it.
    public var requirement: String
    /// What this run measured.
    public var measured: String
    /// Met, not met, or nil when this run cannot tell (a style missing, no churn...).
    public var met: Bool?

    public var verdict: String {
        switch met {
        case true?: return "met"
        case false?: return "NOT MET"
        case nil: return "n/a"
        }
    }
}

/// What `nbus bench views` measured: per style, the figures and the identity; the targets.
public struct ViewsReport: Codable, Sendable {
    public var scenario: ViewsScenario
    public var date: Date
    public var wallNanoseconds: UInt64
    /// The publisher's result (the first run's, when styles ran one at a time).
    public var publisher: ScenarioPublisherResult
    public var publishers: [ScenarioPublisherResult]
    public var styles: [ViewsStyleSummary]
    /// The hosts' raw results, per style.
    public var hosts: [ScenarioHostResult]
    public var targets: [ViewsTarget]
    /// Raw libzmq and Foundation `NotificationCenter`, measured in the same invocation.
    public var baselines: ViewsBaselines
    /// Each style's figures as multiples of raw libzmq's (empty without the raw row).
    public var rawRatios: [ViewsRawRatio]
    /// Accounting problems: each makes the command exit non-zero.
    public var failures: [String]

    init(
        scenario: ViewsScenario, date: Date, wallNanoseconds: UInt64,
        results: [(ScenarioPublisherResult, ScenarioHostResult)], baselines: ViewsBaselines = .none("not run")
    ) {
        self.scenario = scenario
        self.baselines = baselines
        self.date = date
        self.wallNanoseconds = wallNanoseconds
        publishers = []
        for (publisher, _) in results where !publishers.contains(publisher) { publishers.append(publisher) }
        publisher = publishers.first ?? ScenarioPublisherResult(
            postedPerName: [], matchingPerName: [], firstPostWallNanoseconds: 0, lastPostWallNanoseconds: 0,
            postNanoseconds: 0, closeNanoseconds: 0, requestedRate: 0, bus: BusCounters(.init()),
            endOfStreamUnacknowledged: 0, stoppedBy: "none")
        styles = results.map { ViewsStyleSummary(publisher: $0.0, host: $0.1, scenario: scenario) }
        hosts = results.map(\.1)
        var failures: [String] = []
        for style in styles where !style.identityHolds {
            failures.append(
                "\(style.style.rawValue): identity fails for \(style.identityFailures.count) view(s): "
                    + style.identityFailures.prefix(5).joined(separator: " | "))
        }
        for publisher in publishers where publisher.bus.unsent > 0 {
            failures.append("publisher: \(publisher.bus.unsent) notification(s) never sent")
        }
        if let raw = baselines.raw, raw.delivered != raw.published || raw.gaps > 0 || raw.badSize > 0 {
            failures.append(
                "raw libzmq baseline: delivered \(raw.delivered) of \(raw.published) (gaps \(raw.gaps), wrong size \(raw.badSize))")
        }
        if let foundation = baselines.foundation, foundation.delivered != foundation.posted {
            failures.append("Foundation baseline: delivered \(foundation.delivered) of \(foundation.posted)")
        }
        self.failures = failures
        let summaries = styles
        rawRatios = baselines.raw.map { raw in summaries.map { ViewsRawRatio(style: $0, raw: raw) } } ?? []
        targets = Self.evaluateTargets(scenario: scenario, styles: summaries)
    }

    /// The summary of `style`, if it ran.
    public func summary(_ style: ViewStyle) -> ViewsStyleSummary? { styles.first { $0.style == style } }

    // MARK: Targets

    static func evaluateTargets(scenario: ViewsScenario, styles: [ViewsStyleSummary]) -> [ViewsTarget] {
        func find(_ style: ViewStyle) -> ViewsStyleSummary? { styles.first { $0.style == style } }
        var targets: [ViewsTarget] = []
        let ms = { (ns: UInt64) in String(format: "%.0f ms", Double(ns) / 1e6) }

        // 1. Busy time.
        let targetScenario = scenario.selectivity == 0.1 && scenario.rate == 50_000 && scenario.bodyMicroseconds == 20
        let scenarioNote = targetScenario ? "" : " [this run is not the target's scenario: 10%, 50k msg/s, 20 us]"
        if let receive = find(.onReceive), let off = find(.taskOffMain) {
            let ratio = Double(off.mainActorBusyNanoseconds) / Double(max(1, receive.mainActorBusyNanoseconds))
            targets.append(
                ViewsTarget(
                    requirement: "off-main task main-actor busy time <= 1/8 of onReceive's (10% selectivity, 50k msg/s, 20 us)",
                    measured: "\(ms(off.mainActorBusyNanoseconds)) vs \(ms(receive.mainActorBusyNanoseconds)): "
                        + String(format: "1/%.1f", ratio > 0 ? 1 / ratio : .infinity) + scenarioNote,
                    met: off.mainActorBusyNanoseconds * 8 <= receive.mainActorBusyNanoseconds))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "off-main task main-actor busy time <= 1/8 of onReceive's", measured: "needs both styles",
                    met: nil))
        }

        // 2. onReceive renders per message.
        if let receive = find(.onReceive) {
            targets.append(
                ViewsTarget(
                    requirement: "onReceive body evaluations == messages received",
                    measured: "\(Format.count(Int(receive.bodyEvaluations))) bodies, \(Format.count(Int(receive.delivered))) delivered",
                    met: receive.bodyEvaluations == receive.delivered))
        }

        // 3. Task renders per match.
        let tasks = styles.filter(\.style.isTask)
        if !tasks.isEmpty {
            let measured = tasks.map {
                "\($0.style.rawValue) \(Format.count(Int($0.bodyEvaluations))) bodies / \(Format.count(Int($0.handled))) matching"
            }
            targets.append(
                ViewsTarget(
                    requirement: "task body evaluations == matching messages", measured: measured.joined(separator: ", "),
                    met: tasks.allSatisfy { $0.bodyEvaluations == $0.handled && $0.stateUpdates == $0.handled }))
        }

        // 4. Plain task with churn: losses are the messages posted while hidden, reported.
        let plain = styles.filter(\.style.isPlainTask)
        if scenario.hasChurn, !plain.isEmpty {
            let measured = plain.map {
                "\($0.style.rawValue): hidden \(Format.count(Int($0.missedWhileHidden))) (by time "
                    + String(format: "%.0f", $0.expectedHiddenByTime) + "), unseen by sequence "
                    + "\(Format.count(Int($0.unseenBySequence))), in-band gaps \(Format.count(Int($0.inBandHidden)))"
            }
            targets.append(
                ViewsTarget(
                    requirement: "with churn, plain task losses == messages posted while hidden (reported, not silent)",
                    measured: measured.joined(separator: "; "),
                    met: plain.allSatisfy {
                        $0.missedWhileHidden > 0 && $0.inBandHidden == $0.missedWhileHidden
                            && $0.unseenBySequence == $0.missedWhileHidden + $0.lostUpstream + $0.droppedLocalBuffer
                    }))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "with churn, plain task losses == messages posted while hidden",
                    measured: "no churn in this run", met: nil))
        }

        // 5. Replay loses nothing within its bound.
        if scenario.hasChurn, let replay = find(.taskReplay) {
            targets.append(
                ViewsTarget(
                    requirement: "replay .all(max:) loses none within its bound",
                    measured: "max \(scenario.replayMax): hidden \(replay.missedWhileHidden), replayed "
                        + "\(Format.count(Int(replay.replayed))), unseen by sequence \(Format.count(Int(replay.unseenBySequence)))",
                    met: replay.missedWhileHidden == 0 && replay.unseenBySequence == replay.lostUpstream + replay.droppedLocalBuffer))
        } else {
            targets.append(
                ViewsTarget(
                    requirement: "replay .all(max:) loses none within its bound", measured: "no churn or no replay style",
                    met: nil))
        }
        return targets
    }
}
