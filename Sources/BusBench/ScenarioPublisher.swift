import Foundation
import NotificationBus

/// The publisher of a views scenario: binds, waits until every host's subscriptions reached it
/// (`waitForSubscribers`, per subscribed name) and for the runner's go (every host has taken its
/// baseline), posts round-robin over the names at the
/// scenario's rate until its count or its seconds run out, closes (the end-of-stream record
/// lets the hosts count a lost tail), and reports what it posted per name.
enum ScenarioPublisher {
    /// `hostSubscriptions`: one entry per host, which names its views subscribe to. `progress`
    /// gets (posted, ns since the first post) about every 250 ms while posting.
    static func run(
        _ scenario: ViewsScenario, endpoint: String, hostSubscriptions: [ViewSubscription],
        bound: (String) -> Void, progress: (Int, UInt64) -> Void = { _, _ in }, subscribed: () async throws -> Void
    ) async throws -> ScenarioPublisherResult {
        var configuration = BusConfiguration.directPublisher(bind: endpoint)
        configuration.sendHighWaterMark = scenario.highWaterMark
        configuration.receiveHighWaterMark = scenario.highWaterMark
        configuration.publisherBackpressure = scenario.backpressure
        // A host that fell behind acknowledges the end of stream only once it has read up to it:
        // stay connected that long (libzmq discards what is queued for a subscriber when its
        // publisher disconnects, and that tail would go uncounted).
        configuration.closeTimeout = .milliseconds(Int64(clamping: scenario.drainSeconds * 1_000))
        let bus = try Bus(configuration)
        bound(bus.endpoints.first ?? endpoint)

        let names = try (0..<scenario.names).map { try NotificationName(scenario.notificationName($0)) }
        let subjects = (0..<scenario.names).map { ViewsBenchName(scenario, index: $0) }
        let pad = ViewsBenchMessage.pad(size: scenario.size)
        let typed = scenario.isTyped
        // Readiness: every host's subscription to every name its views use reached this XPUB.
        var subscribers = [Int](repeating: 0, count: scenario.names)
        for subscription in hostSubscriptions {
            var host = scenario
            host.subscription = subscription
            for index in host.subscribedNameIndexes where index < subscribers.count { subscribers[index] += 1 }
        }
        for (index, count) in subscribers.enumerated() where count > 0 {
            try await bus.waitForSubscribers(count: count, matching: names[index], timeout: .seconds(scenario.startupSeconds))
        }
        try await subscribed()

        var matching = [UInt8](repeating: 0, count: scenario.size)
        matching[0] = 1
        let other = [UInt8](repeating: 0, count: scenario.size)
        var postedPerName = [UInt64](repeating: 0, count: scenario.names)
        var matchingPerName = [UInt64](repeating: 0, count: scenario.names)
        let nameCount = scenario.names
        let total = scenario.count
        let clock = ContinuousClock()
        let origin = clock.now
        let deadline = origin + .nanoseconds(Int64(scenario.seconds * 1e9))
        let startMonotonic = Timestamps.monotonicNanoseconds()
        let firstWall = Timestamps.wallClockNanoseconds()
        var posted = 0
        var stoppedBy = "count"
        var nextProgress = startMonotonic + ViewsWorker.progressIntervalNanoseconds
        // Bounded: one sample per progress interval of a run bounded by `scenario.seconds`.
        var timeline = [PostingSample(wallNanoseconds: firstWall, posted: 0)]
        func reportProgress() {
            let now = Timestamps.monotonicNanoseconds()
            guard now >= nextProgress else { return }
            nextProgress = now + ViewsWorker.progressIntervalNanoseconds
            progress(posted, now - startMonotonic)
            if timeline.count < 100_000 {
                timeline.append(PostingSample(wallNanoseconds: Timestamps.wallClockNanoseconds(), posted: UInt64(posted)))
            }
        }

        func postOne() async throws {
            let index = posted % nameCount
            let perName = Int(postedPerName[index])
            let matches = scenario.matches(perNameIndex: perName)
            if typed {
                // Encoded here, on the posting task, as any typed post (issue 42, item 3).
                try await bus.post(ViewsBenchMessage(match: matches, pad: pad), subject: subjects[index])
            } else {
                try await bus.post(name: names[index], payload: matches ? matching : other)
            }
            postedPerName[index] += 1
            if matches { matchingPerName[index] += 1 }
            posted += 1
        }

        if let rate = scenario.rate {
            // Paced: notification i is due at origin + i/rate. Everything due is posted at once,
            // then the loop sleeps until the next one is due (pacing only, not synchronisation).
            let interval = 1e9 / Double(rate)
            outer: while posted < total {
                let now = clock.now
                if now >= deadline {
                    stoppedBy = "seconds"
                    break
                }
                let elapsed = Double(Timestamps.monotonicNanoseconds() - startMonotonic)
                let due = min(total, Int(elapsed / interval) + 1)
                while posted < due {
                    try await postOne()
                    if posted & 255 == 0 && clock.now >= deadline {
                        stoppedBy = "seconds"
                        break outer
                    }
                }
                reportProgress()
                if posted < total {
                    let next = origin + .nanoseconds(Int64(Double(posted) * interval))
                    if clock.now < next { try await Task.sleep(until: min(next, deadline), tolerance: .zero, clock: clock) }
                }
            }
        } else {
            while posted < total {
                try await postOne()
                if posted & 255 == 0 {
                    if clock.now >= deadline {
                        stoppedBy = "seconds"
                        break
                    }
                    reportProgress()
                }
            }
        }
        let lastWall = Timestamps.wallClockNanoseconds()
        let postedAt = Timestamps.monotonicNanoseconds()
        timeline.append(PostingSample(wallNanoseconds: lastWall, posted: UInt64(posted)))
        let stats = await bus.close()
        let closedAt = Timestamps.monotonicNanoseconds()
        return ScenarioPublisherResult(
            postedPerName: postedPerName, matchingPerName: matchingPerName, firstPostWallNanoseconds: firstWall,
            lastPostWallNanoseconds: lastWall, postNanoseconds: postedAt - startMonotonic,
            closeNanoseconds: closedAt - postedAt, requestedRate: scenario.rate ?? 0, bus: BusCounters(stats),
            endOfStreamUnacknowledged: stats.endOfStreamUnacknowledged, stoppedBy: stoppedBy, timeline: timeline)
    }
}
