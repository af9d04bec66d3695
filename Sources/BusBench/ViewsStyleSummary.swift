import Foundation

/// One style's figures, summed over its views, with the accounting identity checked per view.
package struct ViewsStyleSummary: Codable, Sendable {
    package var style: ViewStyle
    package var views: Int
    /// Notifications posted to the names the views subscribe to, summed over views.
    package var published: UInt64
    /// Of those, the ones that match the condition.
    package var publishedMatching: UInt64
    /// Reached the views' subscriptions in the host process.
    package var received: UInt64
    /// Handed to the views' code (the `onReceive` action, or a loop iteration), live or replayed.
    package var delivered: UInt64
    /// Delivered and passing the condition: the code wrote state.
    package var handled: UInt64
    /// State writes, as the runtime counted them.
    package var stateUpdates: UInt64
    /// `body` evaluations of the views after they were ready.
    package var bodyEvaluations: UInt64
    /// Main-actor busy time as the runtime accounts it (bodies, `onReceive` actions, a
    /// main-actor loop's handling), ns, and as a share of the host's window.
    package var mainActorBusyNanoseconds: UInt64
    package var mainActorBusyPercent: Double
    /// How long a job enqueued on the main actor waited to run (sampled every 20 ms), ns.
    package var mainActorPing: LatencySummary
    /// Publish to state update (onReceive: to the end of its action, every notification), ns.
    package var latency: LatencySummary
    // Losses by cause:
    package var lostUpstream: UInt64
    package var droppedLocalBuffer: UInt64
    package var missedWhileHidden: UInt64
    package var discardedAtEnd: UInt64
    /// Kept while hidden and delivered on reappear.
    package var replayed: UInt64
    /// Sequence numbers of the views' names never delivered to the views' code (counted from the
    /// sequence numbers the code saw, independently of the loss counters).
    package var unseenBySequence: UInt64
    /// Gap events the task loops were handed for misses while hidden, and for upstream loss.
    package var inBandHidden: UInt64
    package var inBandUpstream: UInt64
    /// Notifications delivered out of order or twice (none expected).
    package var outOfOrder: UInt64
    /// Expected misses from time alone: each view's published notifications times the share of
    /// the publishing window it was hidden.
    package var expectedHiddenByTime: Double
    /// Visibility changes while the publisher posted.
    package var churnTransitions: Int
    /// The host's CPU time (user + system) over its window, and its peak RSS.
    package var cpuNanoseconds: UInt64
    package var peakResidentKiB: UInt64
    /// Which names the views subscribed to, and the notification frames that reached the host's
    /// socket (what ZeroMQ did not filter out at the publisher).
    package var subscription: ViewSubscription
    package var framesReceived: UInt64
    /// The host's CPU time per frame that reached it, ns: the figure to hold against raw libzmq's
    /// subscriber CPU per message.
    package var cpuPerFrameNanoseconds: Double
    /// Delivered per second of the publishing window.
    package var deliveredPerSecond: Double
    /// The host's window (ready to drained) and drain, ns.
    package var windowNanoseconds: UInt64
    package var drainNanoseconds: UInt64
    package var drainIncomplete: Bool
    /// published == delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd,
    /// for every view.
    package var identityHolds: Bool
    /// The views for which it does not, described.
    package var identityFailures: [String]
    /// The publisher's posting loop, seconds (the denominator of the per-second figures).
    package var publishingSeconds: Double
    /// The run over time: one point per sampling interval (about 250 ms) after the first post.
    package var timeline: [TimelinePoint]
    /// What the time series says: peak backlog, when losses started, peak main-actor share.
    package var timelineFindings: TimelineFindings

    /// The right-hand side of the identity, summed.
    package var accounted: UInt64 { delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd }

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
        publishingSeconds = postSeconds
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
        timeline = ViewsTimeline.points(publisher: publisher, host: host, published: published)
        timelineFindings = ViewsTimeline.findings(timeline, postingSeconds: Double(publisher.windowNanoseconds) / 1e9)
    }

    /// Notifications posted to these views per second of the publishing window.
    package var publishedPerSecond: Double { publishingSeconds > 0 ? Double(published) / publishingSeconds : 0 }

    /// Losses no design of this runtime accepts: upstream gaps and local-buffer drops (every style),
    /// and a replay style's misses (beyond its bound).
    package var unexpectedLosses: UInt64 {
        lostUpstream + droppedLocalBuffer + (style == .taskReplay ? missedWhileHidden : 0)
    }

    /// Whether the style fell behind the publisher: still catching up more than 1 s after the last
    /// post (or never done), or a latency a user would see as lag, over 250 ms at the median or 1 s
    /// at p99 (not for replay: a replayed notification's latency includes the time its view was
    /// hidden, by design).
    package var fellBehind: Bool {
        if drainIncomplete || drainNanoseconds > 1_000_000_000 { return true }
        return style != .taskReplay && (latency.p50 > 250_000_000 || latency.p99 > 1_000_000_000)
    }
}
