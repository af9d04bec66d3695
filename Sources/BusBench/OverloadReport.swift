import Foundation

/// Everything one `nbus bench overload` invocation measured, the accounting identity and the
/// memory target of issue 3.
package struct OverloadReport: Codable, Sendable {
    package var seconds: Double
    package var size: Int
    package var handlerMicroseconds: Int
    package var policy: OverloadPolicy
    package var buffer: Int
    package var highWaterMark: Int32
    package var closeTimeoutMilliseconds: Int32
    package var rssLimitBytes: UInt64
    package var date: String
    package var host: String
    package var processors: Int

    /// The publisher's `done` line.
    package var publisher: OverloadPublisherResult
    /// The subscriber's `result` line.
    package var subscriber: OverloadSubscriberResult
    /// The subscriber's and the publisher's `/proc/<pid>/status`, as the runner sampled them.
    package var subscriberSeenByRunner: MemorySamples
    package var publisherSeenByRunner: MemorySamples
    /// Start of the publisher to the end of the subscriber, ns.
    package var wallNanoseconds: UInt64

    package init(
        options: OverloadOptions, publisher: OverloadPublisherResult, subscriber: OverloadSubscriberResult,
        subscriberSeenByRunner: MemorySamples, publisherSeenByRunner: MemorySamples, wallNanoseconds: UInt64
    ) {
        seconds = options.seconds
        size = options.size
        handlerMicroseconds = options.handlerMicroseconds
        policy = options.policy
        buffer = options.buffer
        highWaterMark = options.highWaterMark
        closeTimeoutMilliseconds = options.closeTimeoutMilliseconds
        rssLimitBytes = options.rssLimitBytes
        date = ISO8601DateFormatter().string(from: Date())
        host = ProcessInfo.processInfo.hostName
        processors = ProcessInfo.processInfo.activeProcessorCount
        self.publisher = publisher
        self.subscriber = subscriber
        self.subscriberSeenByRunner = subscriberSeenByRunner
        self.publisherSeenByRunner = publisherSeenByRunner
        self.wallNanoseconds = wallNanoseconds
    }

    // MARK: The identity

    /// Sequence numbers 1...published exist: the publisher's `BusStats.posted`.
    package var published: UInt64 { publisher.posted }

    /// delivered + lostUpstream + droppedLocalBuffer + discardedAtEnd + buffered, for the stream.
    package var accounted: UInt64 {
        let s = subscriber.subscription
        return s.delivered + s.lostUpstream + s.droppedLocalBuffer + s.discardedAtEnd + s.buffered
    }

    /// published - accounted (positive: notifications counted nowhere; negative: counted twice).
    package var difference: Int64 { Int64(bitPattern: published &- accounted) }

    /// Whether published == accounted, exactly.
    package var identityHolds: Bool { published == accounted }

    // MARK: Memory

    /// The subscriber's peak resident memory, bytes: the largest of its own `VmHWM` (the kernel's
    /// peak, which no sampling interval can miss), its sampled `VmRSS`, and what the runner read.
    package var subscriberPeakBytes: UInt64 {
        let kib = max(
            subscriber.memory.peakResidentKiB, subscriber.memory.maximumResidentKiB,
            subscriberSeenByRunner.peakResidentKiB, subscriberSeenByRunner.maximumResidentKiB)
        return kib * 1_024
    }

    /// Whether the subscriber stayed below the limit.
    package var memoryWithinLimit: Bool { subscriberPeakBytes < rssLimitBytes }

    // MARK: Load

    /// Notifications the handler can take per second at most (1 / handler time).
    package var handlerCapacity: Double { handlerMicroseconds > 0 ? 1e6 / Double(handlerMicroseconds) : .infinity }

    /// Publisher rate over the handler's capacity: the brief wants at least 10.
    package var overloadFactor: Double { handlerCapacity.isFinite ? publisher.postRate / handlerCapacity : 0 }

    // MARK: Checks

    /// The checks that must hold; each failure is one line. Empty: the run passes (exit 0).
    ///
    /// The first two are the targets (the identity, peak RSS); the others check that the counters
    /// agree with one another and with what the loop saw in-band.
    package var failures: [String] {
        var failures: [String] = []
        let s = subscriber.subscription
        let c = subscriber.consumed
        if !identityHolds {
            failures.append(
                "identity: published \(published) != delivered \(s.delivered) + lostUpstream \(s.lostUpstream) "
                    + "+ droppedLocalBuffer \(s.droppedLocalBuffer) + discardedAtEnd \(s.discardedAtEnd) "
                    + "+ buffered \(s.buffered) = \(accounted) (published - accounted = \(difference))")
        }
        if !memoryWithinLimit {
            failures.append(
                "memory: subscriber peak RSS \(Self.megabytes(subscriberPeakBytes)) >= limit \(Self.megabytes(rssLimitBytes))")
        }
        if publisher.posts != publisher.posted {
            failures.append("publisher: the loop's \(publisher.posts) posts != BusStats.posted \(publisher.posted)")
        }
        if c.notifications != s.delivered {
            failures.append("in-band: the loop handled \(c.notifications) notifications, the subscription delivered \(s.delivered)")
        }
        if c.upstreamLost != s.lostUpstream {
            failures.append("in-band: lostUpstream gaps in the loop sum to \(c.upstreamLost), the counter says \(s.lostUpstream)")
        }
        if c.localDropped != s.droppedLocalBuffer {
            failures.append(
                "in-band: droppedLocalBuffer gaps in the loop sum to \(c.localDropped), the counter says \(s.droppedLocalBuffer)")
        }
        if s.received != s.delivered + s.droppedLocalBuffer + s.discardedAtEnd + s.buffered {
            failures.append(
                "subscription: received \(s.received) != delivered + droppedLocalBuffer + discardedAtEnd + buffered "
                    + "(\(s.delivered + s.droppedLocalBuffer + s.discardedAtEnd + s.buffered))")
        }
        if c.highestSequence != published {
            failures.append("in-band: the highest sequence accounted for is \(c.highestSequence), the last published \(published)")
        }
        if c.outOfOrder != 0 || c.badSize != 0 || c.otherLost != 0 || subscriber.bus.rejected != 0 {
            failures.append(
                "stream: out of order \(c.outOfOrder), wrong payload size \(c.badSize), other gaps \(c.otherLost), "
                    + "rejected frames \(subscriber.bus.rejected)")
        }
        if subscriber.endedBy != "endOfStream" {
            failures.append("end: the subscriber ended by \(subscriber.endedBy), not by the publisher's end-of-stream record")
        }
        return failures
    }

    /// Why the identity does not hold, as far as the counters tell.
    package var diagnosis: [String] {
        guard !identityHolds else { return [] }
        var lines: [String] = []
        let c = subscriber.consumed
        if difference > 0 {
            lines.append("\(difference) notification(s) published but counted nowhere at the subscriber.")
        } else {
            lines.append("\(-difference) notification(s) counted more than once at the subscriber.")
        }
        if subscriber.bus.endOfStreamRecords == 0 {
            let tail = published > c.highestSequence ? published - c.highestSequence : 0
            lines.append(
                "The subscriber processed no end-of-stream record (endOfStreamRecords 0); the publisher's close took "
                    + "\(Format.nanoseconds(Double(publisher.closeNanoseconds))) of its \(publisher.closeTimeoutMilliseconds) ms "
                    + "timeout and reports endOfStreamUnacknowledged = \(publisher.endOfStreamUnacknowledged). The stream's "
                    + "tail after sequence \(c.highestSequence) (the highest the subscriber accounted for) was lost without "
                    + "a gap: \(tail) notification(s)\(UInt64(max(0, difference)) == tail ? ", exactly the difference" : "").")
        } else if publisher.endOfStreamUnacknowledged > 0 {
            lines.append(
                "The end-of-stream record did arrive (endOfStreamRecords \(subscriber.bus.endOfStreamRecords)), but after the "
                    + "publisher stopped waiting for its acknowledgement (endOfStreamUnacknowledged = "
                    + "\(publisher.endOfStreamUnacknowledged)).")
        }
        if c.notifications > 0 && c.firstSequence > 1 && subscriber.subscription.droppedLocalBuffer == 0 {
            lines.append(
                "The first notification handled had sequence \(c.firstSequence): the \(c.firstSequence - 1) before it "
                    + "are never reported (a stream's first message is not a gap).")
        }
        return lines
    }

    // MARK: Rendering

    /// The report as one JSON object (sorted keys), with the derived figures under `summary`.
    package func json() throws -> String {
        struct Envelope: Encodable {
            let report: OverloadReport
            let summary: Summary
        }
        struct Summary: Encodable {
            let published: UInt64
            let accounted: UInt64
            let difference: Int64
            let identityHolds: Bool
            let subscriberPeakBytes: UInt64
            let memoryWithinLimit: Bool
            let publishRate: Double
            let consumeRate: Double
            let overloadFactor: Double
            let failures: [String]
            let diagnosis: [String]
        }
        let summary = Summary(
            published: published, accounted: accounted, difference: difference, identityHolds: identityHolds,
            subscriberPeakBytes: subscriberPeakBytes, memoryWithinLimit: memoryWithinLimit,
            publishRate: publisher.postRate, consumeRate: subscriber.consumeRate, overloadFactor: overloadFactor,
            failures: failures, diagnosis: diagnosis)
        return try ReportJSON.encode(Envelope(report: self, summary: summary))
    }

    /// The report as a terminal table.
    package func table() -> String {
        var lines: [String] = []
        func row(_ label: String, _ value: String, _ note: String = "") {
            lines.append(Format.row(label, value, note, labelWidth: 50))
        }
        func count(_ value: UInt64) -> String { Format.count(Int(value)) }
        let s = subscriber.subscription
        let c = subscriber.consumed

        lines.append(
            "nbus bench overload: \(Format.seconds(seconds)) of posting, \(Format.count(size)) B payload, ipc; publisher: "
                + "default BusConfiguration (HWM \(highWaterMark), back-pressure \(publisher.publisherBackpressure ? "on" : "off"), "
                + "close timeout \(closeTimeoutMilliseconds) ms)")
        lines.append(
            "subscriber: events(named:buffering: .\(policy.bufferingName)(capacity: \(buffer))), one for-await loop, "
                + "handler \(handlerMicroseconds) us busy per notification")
        lines.append("")
        row("Accounting (one stream: \(OverloadOptions.notificationName))", "notifications")
        row("  published (publisher BusStats.posted)", count(published),
            "sent \(count(publisher.sent)), unsent \(count(publisher.unsent))")
        row("  delivered (to the for-await loop)", count(s.delivered), "the loop handled \(count(c.notifications))")
        row("  lostUpstream (XPUB HWM drops, tail)", count(s.lostUpstream), "\(count(c.upstreamGapEvents)) gap events in-band")
        row("  droppedLocalBuffer", count(s.droppedLocalBuffer), "\(count(c.localGapEvents)) gap events in-band")
        row("  discardedAtEnd", count(s.discardedAtEnd))
        row("  still buffered", count(s.buffered))
        row("  accounted (sum of the five)", count(accounted))
        lines.append(
            "  identity published == delivered + lostUpstream + droppedLocalBuffer + discardedAtEnd + buffered: "
                + (identityHolds ? "HOLDS (\(count(published)) == \(count(accounted)))" : "DOES NOT HOLD (difference \(difference))"))
        lines.append("")
        row("Memory (subscriber process)", "peak")
        row("  peak RSS (max of VmHWM and sampled VmRSS)", Self.megabytes(subscriberPeakBytes),
            "target < \(Self.megabytes(rssLimitBytes)): \(memoryWithinLimit ? "MET" : "NOT MET")")
        row("  its own samples: max VmRSS / VmHWM",
            "\(kibibytesAsMegabytes(subscriber.memory.maximumResidentKiB))",
            "/ \(kibibytesAsMegabytes(subscriber.memory.peakResidentKiB)) (\(subscriber.memory.residentKiB.count) samples, "
                + "every \(subscriber.memory.intervalMilliseconds) ms)")
        row("  runner's /proc/<pid>/status: max VmRSS / VmHWM",
            "\(kibibytesAsMegabytes(subscriberSeenByRunner.maximumResidentKiB))",
            "/ \(kibibytesAsMegabytes(subscriberSeenByRunner.peakResidentKiB)) (\(subscriberSeenByRunner.residentKiB.count) samples)")
        row("  publisher process, VmHWM (info)",
            kibibytesAsMegabytes(max(publisher.memory?.peakResidentKiB ?? 0, publisherSeenByRunner.peakResidentKiB)))
        lines.append("")
        row("Load and durations", "")
        row("  publisher: posting", Format.nanoseconds(Double(publisher.postNanoseconds)),
            "\(Format.rate(publisher.postRate)) notifications/s")
        row("  handler capacity (1 / \(handlerMicroseconds) us)", Format.rate(handlerCapacity) + "/s",
            String(format: "overload %.1fx%@", overloadFactor, overloadFactor >= 10 ? "" : " (below the 10x wanted)"))
        row("  subscriber: consuming (first to last event)", Format.nanoseconds(Double(subscriber.consumingNanoseconds)),
            "\(Format.rate(subscriber.consumeRate)) notifications/s")
        row("  publisher: close (flush, end of stream, ack)", Format.nanoseconds(Double(publisher.closeNanoseconds)),
            "endOfStreamUnacknowledged \(publisher.endOfStreamUnacknowledged)")
        row("  subscriber: drain after the end-of-stream record", Format.nanoseconds(Double(subscriber.drainAfterEndOfStreamNanoseconds)),
            "ended by \(subscriber.endedBy); endOfStreamRecords \(subscriber.bus.endOfStreamRecords)")
        row("  wall clock, whole run", Format.nanoseconds(Double(wallNanoseconds)))
        lines.append("")
        let failures = self.failures
        if failures.isEmpty {
            lines.append(
                "OK: the identity holds exactly, every loss was seen in-band, and the subscriber's peak RSS "
                    + "\(Self.megabytes(subscriberPeakBytes)) < \(Self.megabytes(rssLimitBytes)).")
        } else {
            lines.append("FAILED:")
            for failure in failures { lines.append("  " + failure) }
            for line in diagnosis { lines.append("  why: " + line) }
        }
        return lines.joined(separator: "\n")
    }

    static func megabytes(_ bytes: UInt64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1e6)
    }
}

extension OverloadPolicy {
    /// The `BufferingPolicy` case's name.
    var bufferingName: String {
        switch self {
        case .dropOldest: return "dropOldest"
        case .dropNewest: return "dropNewest"
        case .suspend: return "suspendProducer"
        }
    }
}

extension Format {
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(format: "%.0f s", value) : String(format: "%.2f s", value)
    }
}
