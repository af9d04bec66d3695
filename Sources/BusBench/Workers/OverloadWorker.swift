import Foundation
import NotificationBus
import Synchronization
import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// One side of the overload benchmark. JSON lines on stdout, like `BusWorker`: the publisher
/// prints `bound` then `done` (`OverloadPublisherResult`); the subscriber prints `subscribed`
/// then `result` (`OverloadSubscriberResult`). Diagnostics go to stderr. The subscriber reads
/// stdin: a line `publisher-exited` from the runner, end of file when the runner is gone.
package enum OverloadWorker {
    /// The stdin line by which the runner tells the subscriber that the publisher process has ended.
    package static let publisherExitedLine = "publisher-exited"

    /// Runs the worker; returns the process exit status (0: reported, 1: failed).
    package static func run(_ options: OverloadWorkerOptions) async -> Int32 {
        let control = Control()
        // The subscriber hears `publisher-exited` on stdin; a line sets the flag.
        var onControlLine: (@Sendable (String) -> Void)?
        if options.role == .subscriber {
            onControlLine = { line in
                if line == publisherExitedLine { control.publisherExited.store(true, ordering: .releasing) }
            }
        }
        return await WorkerProcess.run(
            kind: .overload, role: options.role.rawValue, hardDeadlineSeconds: min(options.timeoutSeconds, 31_536_000) + 5,
            exitWhenRunnerGone: options.exitOnStandardInputEOF, onControlLine: onControlLine
        ) {
            switch options.role {
            case .publisher: return try await runPublisher(options)
            case .subscriber: return try await runSubscriber(options, control: control)
            }
        }
    }

    // MARK: Publisher

    private static func runPublisher(_ options: OverloadWorkerOptions) async throws -> Int32 {
        let name = try NotificationName(options.name)
        // The bus's defaults, except the endpoint (and HWM / close timeout only when asked):
        // publisherBackpressure stays false, so the XPUB drops at its HWM instead of waiting.
        var configuration = BusConfiguration.directPublisher(bind: options.endpoint)
        configuration.sendHighWaterMark = options.highWaterMark
        configuration.receiveHighWaterMark = options.highWaterMark
        configuration.closeTimeout = .milliseconds(options.closeTimeoutMilliseconds)
        let bus = try Bus(configuration)
        WorkerProcess.emitJSON(BoundLineOut(endpoint: bus.endpoints.first ?? options.endpoint))

        // Readiness: the subscriber's subscription (and presence) reached this XPUB.
        try await bus.waitForSubscribers(count: 1, matching: name, timeout: .seconds(options.timeoutSeconds))

        let payload = [UInt8](repeating: 0xAB, count: options.size)
        let start = Timestamps.monotonicNanoseconds()
        let end = start + UInt64(options.seconds * 1e9)
        var posts: UInt64 = 0
        var now = start
        while now < end {
            for _ in 0..<64 {
                try await bus.post(name: name, payload: payload)
                posts += 1
            }
            now = Timestamps.monotonicNanoseconds()
        }
        let posted = Timestamps.monotonicNanoseconds()
        let stats = await bus.close()
        let closed = Timestamps.monotonicNanoseconds()
        WorkerProcess.emitJSON(
            OverloadPublisherResult(
                posts: posts, postNanoseconds: posted - start, closeNanoseconds: closed - posted, posted: stats.posted,
                sent: stats.sent, unsent: stats.unsent, endOfStreamUnacknowledged: stats.endOfStreamUnacknowledged,
                highWaterMark: configuration.sendHighWaterMark,
                closeTimeoutMilliseconds: configuration.closeTimeoutInMilliseconds,
                publisherBackpressure: configuration.publisherBackpressure, memory: ProcessMemory.read()))
        return 0
    }

    // MARK: Subscriber

    private static func runSubscriber(_ options: OverloadWorkerOptions, control: Control) async throws -> Int32 {
        let sampler = MemorySampler(pid: nil, intervalMilliseconds: options.sampleIntervalMilliseconds)
        sampler.start()
        let name = try NotificationName(options.name)
        var configuration = BusConfiguration.directSubscriber(connect: [options.endpoint])
        configuration.sendHighWaterMark = options.highWaterMark
        configuration.receiveHighWaterMark = options.highWaterMark
        let bus = try Bus(configuration)
        let sequence = try bus.events(
            named: NamePattern(exactly: name), buffering: options.policy.buffering(capacity: options.buffer))
        let subscribedAt = Timestamps.monotonicNanoseconds()
        WorkerProcess.emitLine(#"{"event":"subscribed"}"#)

        let handlerNanoseconds = UInt64(max(0, options.handlerMicroseconds)) * 1_000
        let expectedSize = options.size
        // The slow consumer: a `for await` loop over the events, busy for `handlerNanoseconds` per
        // notification. Gaps come in-band, where the loss happened.
        let consumer = Task { () -> OverloadConsumed in
            var consumed = OverloadConsumed()
            var lastSequence: UInt64 = 0
            for await event in sequence {
                let now = Timestamps.monotonicNanoseconds()
                if consumed.firstAt == 0 { consumed.firstAt = now }
                switch event {
                case .notification(let notification):
                    consumed.checksum &+= handle(notification.payload, busyNanoseconds: handlerNanoseconds)
                    if consumed.notifications == 0 { consumed.firstSequence = notification.sequence }
                    if notification.sequence <= lastSequence { consumed.outOfOrder += 1 }
                    lastSequence = notification.sequence
                    consumed.highestSequence = max(consumed.highestSequence, notification.sequence)
                    consumed.payloadBytes &+= UInt64(notification.payload.count)
                    if notification.payload.count != expectedSize { consumed.badSize += 1 }
                    consumed.notifications += 1
                    control.consumed.store(consumed.notifications, ordering: .releasing)
                case .gap(let gap):
                    switch gap.cause {
                    case .lostUpstream:
                        consumed.upstreamGapEvents += 1
                        consumed.upstreamLost += gap.count
                        if let range = gap.sequences { consumed.highestSequence = max(consumed.highestSequence, range.upperBound) }
                        control.upstreamLost.store(consumed.upstreamLost, ordering: .releasing)
                    case .droppedLocalBuffer:
                        consumed.localGapEvents += 1
                        consumed.localDropped += gap.count
                        control.localDropped.store(consumed.localDropped, ordering: .releasing)
                    case .missedWhileInactive:
                        consumed.otherLost += gap.count
                    }
                }
                consumed.lastAt = Timestamps.monotonicNanoseconds()
            }
            return consumed
        }

        let ending = watchForEnd(
            bus: bus, sequence: sequence, control: control,
            deadline: subscribedAt + UInt64(options.timeoutSeconds) * 1_000_000_000)
        let consumed = await consumer.value
        let ended = await ending.value
        // The loop is over and its iterator gone: these counters are final.
        let subscription = sequence.stats
        let stats = await bus.close()
        let memory = sampler.stop()
        WorkerProcess.emitJSON(
            OverloadSubscriberResult(
                policy: options.policy, capacity: options.buffer, handlerMicroseconds: options.handlerMicroseconds,
                highWaterMark: options.highWaterMark, consumed: consumed, subscription: subscription,
                bus: OverloadBusCounters(stats), endedBy: ended.reason,
                subscribedToFirstNanoseconds: consumed.firstAt > subscribedAt ? consumed.firstAt - subscribedAt : 0,
                consumingNanoseconds: consumed.lastAt > consumed.firstAt ? consumed.lastAt - consumed.firstAt : 0,
                drainAfterEndOfStreamNanoseconds: ended.endOfStreamAt.map { ended.at > $0 ? ended.at - $0 : 0 } ?? 0,
                memory: memory))
        return 0
    }

    /// The handler's busy work: reads one byte per cache line of the payload, then spins on the
    /// monotonic clock until `busyNanoseconds` have passed since it started.
    @inline(never)
    static func handle(_ payload: [UInt8], busyNanoseconds: UInt64) -> UInt64 {
        let start = Timestamps.monotonicNanoseconds()
        var checksum: UInt64 = 0
        payload.withUnsafeBufferPointer { bytes in
            var index = 0
            while index < bytes.count {
                checksum &+= UInt64(bytes[index])
                index += 64
            }
        }
        while Timestamps.monotonicNanoseconds() &- start < busyNanoseconds {}
        return checksum
    }

    private struct Ending: Sendable {
        var reason: String
        var at: UInt64
        var endOfStreamAt: UInt64?
    }

    /// Ends the subscription (so the loop ends) once the stream is over and fully consumed, checked
    /// every 10 ms on a thread of its own (the consumer may hold a cooperative thread busy):
    /// - `endOfStream`: the bus has processed the publisher's end-of-stream record (so any lost
    ///   tail is counted and its gap queued), nothing is buffered, and the loop has consumed every
    ///   notification delivered and every gap counted;
    /// - `publisherExited`, when no end-of-stream record came: the runner said the publisher
    ///   process has ended, nothing is buffered or undelivered, and no frame arrived for 1 s;
    /// - `timeout`: the worker's deadline.
    private static func watchForEnd(
        bus: Bus, sequence: BusEventSequence, control: Control, deadline: UInt64
    ) -> Task<Ending, Never> {
        let done = OneShot<Ending>()
        Thread.detachNewThread {
            var endOfStreamAt: UInt64?
            var lastFrames: UInt64 = 0
            var quietSince = Timestamps.monotonicNanoseconds()
            while true {
                // Order matters: the bus's snapshot is published after a round's batches reached the
                // subscription, so a tail gap counted there is already in `sequence.stats`.
                let busStats = bus.stats
                let stats = sequence.stats
                let consumed = control.consumed.load(ordering: .acquiring)
                let upstream = control.upstreamLost.load(ordering: .acquiring)
                let local = control.localDropped.load(ordering: .acquiring)
                let now = Timestamps.monotonicNanoseconds()
                if busStats.endOfStreamRecords > 0 && endOfStreamAt == nil { endOfStreamAt = now }
                if busStats.framesReceived != lastFrames {
                    lastFrames = busStats.framesReceived
                    quietSince = now
                }
                let drained = stats.buffered == 0 && stats.delivered == consumed
                var reason: String?
                // Every notification delivered has been handled and every gap counted has been seen:
                // nothing is left in the shared buffer or in the iterator's own.
                let consumedInBand = drained && upstream == stats.lostUpstream && local == stats.droppedLocalBuffer
                if endOfStreamAt != nil {
                    if consumedInBand { reason = "endOfStream" }
                } else if control.publisherExited.load(ordering: .acquiring) && consumedInBand
                    && now - quietSince >= 1_000_000_000
                {
                    reason = "publisherExited"
                }
                if reason == nil && now >= deadline { reason = "timeout" }
                if let reason {
                    let ending = Ending(reason: reason, at: now, endOfStreamAt: endOfStreamAt)
                    sequence.cancel()
                    done.finish(ending)
                    return
                }
                usleep(10_000)
            }
        }
        return Task {
            // Nobody cancels this task; were it cancelled, the loop's end would be unexplained.
            await done.value ?? Ending(reason: "cancelled", at: Timestamps.monotonicNanoseconds(), endOfStreamAt: nil)
        }
    }

    /// Shared between the consumer task, the end watcher and the stdin reader.
    final class Control: Sendable {
        let consumed = Atomic<UInt64>(0)
        let upstreamLost = Atomic<UInt64>(0)
        let localDropped = Atomic<UInt64>(0)
        let publisherExited = Atomic<Bool>(false)
    }

    private struct BoundLineOut: Encodable {
        var event = "bound"
        var endpoint: String
    }
}
