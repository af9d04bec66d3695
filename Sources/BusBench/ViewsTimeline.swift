import Foundation

enum ViewsTimeline {
    /// The style's points: one per host sample taken after the first post, rates from the
    /// difference with the previous sample. `published` is the style's views' total (the publisher's
    /// posts scale to it: with `spread`, each post reaches one view).
    static func points(publisher: ScenarioPublisherResult, host: ScenarioHostResult, published: UInt64) -> [TimelinePoint] {
        let samples = host.timeline
        guard samples.count >= 2, publisher.posted > 0 else { return [] }
        let origin = publisher.firstPostWallNanoseconds
        let scale = Double(published) / Double(publisher.posted)
        func publishedToViews(at wall: UInt64) -> Double { postedAt(wall, publisher) * scale }
        var points: [TimelinePoint] = []
        for (previous, sample) in zip(samples, samples.dropFirst()) where sample.wallNanoseconds > origin {
            guard sample.wallNanoseconds > previous.wallNanoseconds else { continue }
            let seconds = Double(sample.wallNanoseconds - previous.wallNanoseconds) / 1e9
            // Counters only grow; a smaller one (never expected) reads as no change, not as a wrap.
            func rate(_ value: (HostSample) -> UInt64) -> Double {
                value(sample) > value(previous) ? Double(value(sample) - value(previous)) / seconds : 0
            }
            let accounted = Double(sample.delivered + sample.lostUpstream + sample.droppedLocalBuffer + sample.missedWhileHidden)
            let busy = Double(sample.mainActorBusyNanoseconds > previous.mainActorBusyNanoseconds
                ? sample.mainActorBusyNanoseconds - previous.mainActorBusyNanoseconds : 0)
            points.append(
                TimelinePoint(
                    seconds: Double(sample.wallNanoseconds - origin) / 1e9,
                    publishedPerSecond: (publishedToViews(at: sample.wallNanoseconds) - publishedToViews(at: previous.wallNanoseconds))
                        / seconds,
                    deliveredPerSecond: rate(\.delivered),
                    backlog: max(0, publishedToViews(at: sample.wallNanoseconds) - accounted),
                    latencyP50: sample.latencyCount > 0 ? sample.latencyP50 : nil,
                    latencyP99: sample.latencyCount > 0 ? sample.latencyP99 : nil,
                    lostUpstreamPerSecond: rate(\.lostUpstream), droppedLocalBufferPerSecond: rate(\.droppedLocalBuffer),
                    missedWhileHiddenPerSecond: rate(\.missedWhileHidden), replayedPerSecond: rate(\.replayed),
                    mainActorBusyPercent: min(100, busy / (seconds * 1e9) * 100)))
        }
        return points
    }

    /// The publisher's count at `wall`, interpolated between its samples.
    static func postedAt(_ wall: UInt64, _ publisher: ScenarioPublisherResult) -> Double {
        let samples = publisher.timeline
        guard let first = samples.first, let last = samples.last else {
            return wall >= publisher.lastPostWallNanoseconds ? Double(publisher.posted) : 0
        }
        if wall <= first.wallNanoseconds { return Double(first.posted) }
        if wall >= last.wallNanoseconds { return Double(last.posted) }
        // Samples are in time order: find the pair around `wall`.
        var low = 0
        var high = samples.count - 1
        while high - low > 1 {
            let middle = (low + high) / 2
            if samples[middle].wallNanoseconds <= wall { low = middle } else { high = middle }
        }
        let a = samples[low]
        let b = samples[high]
        guard b.wallNanoseconds > a.wallNanoseconds else { return Double(b.posted) }
        let fraction = Double(wall - a.wallNanoseconds) / Double(b.wallNanoseconds - a.wallNanoseconds)
        return Double(a.posted) + fraction * (Double(b.posted) - Double(a.posted))
    }

    static func findings(_ points: [TimelinePoint], postingSeconds: Double) -> TimelineFindings {
        var findings = TimelineFindings()
        for point in points {
            if point.backlog > findings.peakBacklog {
                findings.peakBacklog = point.backlog
                findings.peakBacklogSeconds = point.seconds
            }
            if findings.firstUpstreamLossSeconds == nil && (point.lostUpstreamPerSecond > 0 || point.droppedLocalBufferPerSecond > 0) {
                findings.firstUpstreamLossSeconds = point.seconds
            }
            findings.peakMainActorBusyPercent = max(findings.peakMainActorBusyPercent, point.mainActorBusyPercent)
        }
        findings.backlogAtLastPost = points.last { $0.seconds <= postingSeconds + 0.001 }?.backlog ?? 0
        return findings
    }
}
