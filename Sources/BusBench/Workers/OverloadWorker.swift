import Foundation
import NotificationBus
import Synchronization
import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// The subscriber's buffering policy in the overload benchmark (`--policy`).
package enum OverloadPolicy: String, Sendable, CaseIterable, Codable {
    /// `.dropOldest(capacity:)`: the I/O thread keeps reading; the buffer discards its oldest.
    case dropOldest = "drop-oldest"
    /// `.dropNewest(capacity:)`: the I/O thread keeps reading; the buffer refuses the arriving one.
    case dropNewest = "drop-newest"
    /// `.suspendProducer(capacity:)`: the I/O thread stops reading; ZeroMQ's HWMs fill and the
    /// publisher's XPUB drops.
    case suspend

    /// The bus's `BufferingPolicy` for this choice.
    package func buffering(capacity: Int) -> BufferingPolicy {
        switch self {
        case .dropOldest: return .dropOldest(capacity: capacity)
        case .dropNewest: return .dropNewest(capacity: capacity)
        case .suspend: return .suspendProducer(capacity: capacity)
        }
    }
}

/// What one overload worker process does (`nbus bench worker overload`).
package struct OverloadWorkerOptions: Sendable, Codable {
    /// Which side of the pair this process is.
    package enum Role: String, Sendable, CaseIterable, Codable {
        /// `Bus(.directPublisher(bind:))` with the default configuration (no back-pressure: the
        /// XPUB drops at its HWM); posts as fast as it can for `seconds`, then closes.
        case publisher
        /// `Bus(.directSubscriber(connect:))`; one `for await` loop over `events(named:buffering:)`
        /// with a deliberately slow handler; samples its own RSS.
        case subscriber
    }

    package var role: Role
    /// Where the publisher binds / the subscriber connects.
    package var endpoint: String
    /// Publisher: seconds of posting.
    package var seconds: Double = 60
    /// Payload bytes per notification.
    package var size: Int = 4_096
    /// Subscriber: busy work per notification, microseconds (monotonic clock).
    package var handlerMicroseconds: Int = 100
    /// Subscriber: buffering policy and capacity.
    package var policy: OverloadPolicy = .dropOldest
    package var buffer: Int = 8_192
    /// ZeroMQ send and receive HWMs, both sides (the bus's default unless set).
    package var highWaterMark: Int32 = BusConfiguration().sendHighWaterMark
    /// Publisher: `closeTimeoutMilliseconds` (the bus's default unless set).
    package var closeTimeoutMilliseconds: Int32 = BusConfiguration().closeTimeoutInMilliseconds
    /// Subscriber: `VmRSS` sampling interval, milliseconds.
    package var sampleIntervalMilliseconds: Int = 250
    /// The notification name.
    package var name: String = OverloadOptions.notificationName
    /// Seconds until the worker gives up (a subscriber still reports what it saw).
    package var timeoutSeconds: Int = 180
    /// Exit as soon as stdin reaches end of file (the parent holds the pipe's write end).
    package var exitOnStandardInputEOF = false

    package init(role: Role, endpoint: String) {
        self.role = role
        self.endpoint = endpoint
    }

    /// The command line that runs this worker through `command` (see `BenchWorkerCommand`).
    func arguments(command: [String]) -> [String] {
        BenchWorkerCommand.arguments(command, .overload, self)
    }
}

extension OverloadWorkerOptions: BenchWorkerOptions {
    static let template = OverloadWorkerOptions(role: .publisher, endpoint: "")
    static let requiredKeys = ["role", "endpoint"]
    static let optionalKeys: [String] = []
    static let example = #"{"role":"subscriber","endpoint":"ipc:///tmp/o.sock","policy":"suspend"}"#

    var outOfRange: String? {
        typealias C = BenchWorkerCommand
        guard seconds.isFinite else { return "seconds must be a number, got \(seconds)" }
        return C.range("seconds", seconds, 0.001...86_400) ?? C.range("size", size, 0...(64 << 20))
            ?? C.range("handlerMicroseconds", handlerMicroseconds, 0...1_000_000) ?? C.range("buffer", buffer, 1...100_000_000)
            ?? C.range("highWaterMark", highWaterMark, 0...Int32.max)
            ?? C.range("closeTimeoutMilliseconds", closeTimeoutMilliseconds, 0...3_600_000)
            ?? C.range("sampleIntervalMilliseconds", sampleIntervalMilliseconds, 1...60_000)
            ?? C.range("timeoutSeconds", timeoutSeconds, 1...31_536_000)
    }
}

/// What the overload publisher reports (its `done` line).
package struct OverloadPublisherResult: Codable, Sendable {
    package var event = "done"
    /// `post` calls that returned (the loop's own count).
    package var posts: UInt64
    /// Time in the posting loop, ns.
    package var postNanoseconds: UInt64
    /// Time `close()` took (flush, end-of-stream record and its acknowledgement), ns.
    package var closeNanoseconds: UInt64
    /// `BusStats.posted`: notifications accepted by `post`, i.e. sequence numbers 1...posted.
    package var posted: UInt64
    /// `BusStats.sent`: frames handed to ZeroMQ (the XPUB may still drop them at its HWM).
    package var sent: UInt64
    /// `BusStats.unsent`: posts never handed to ZeroMQ.
    package var unsent: UInt64
    /// `BusStats.endOfStreamUnacknowledged`: subscribers that did not acknowledge the end of stream.
    package var endOfStreamUnacknowledged: UInt64
    /// The configuration used.
    package var highWaterMark: Int32
    package var closeTimeoutMilliseconds: Int32
    package var publisherBackpressure: Bool
    /// The publisher's own memory at the end.
    package var memory: ProcessMemory?

    /// posted / posting time, per second.
    package var postRate: Double { ratePerSecond(Int(posted), postNanoseconds) }
}

/// The subscription's counters at the end, including what is still buffered (the bus's own type).
package typealias OverloadSubscriptionCounters = SubscriptionStats

/// The subscriber bus's counters after close (the workers' common type).
package typealias OverloadBusCounters = BusCounters

/// What the `for await` loop itself saw, in-band.
package struct OverloadConsumed: Codable, Sendable, Equatable {
    /// Notifications handled.
    package var notifications: UInt64 = 0
    /// Payload bytes handled, and notifications whose payload had the wrong size.
    package var payloadBytes: UInt64 = 0
    package var badSize: UInt64 = 0
    /// Notifications whose sequence was not above the previous one's.
    package var outOfOrder: UInt64 = 0
    /// The first notification's sequence (1 when nothing was lost before it).
    package var firstSequence: UInt64 = 0
    /// The highest sequence accounted for in-band: a notification's, or the end of a gap's range.
    package var highestSequence: UInt64 = 0
    /// `.gap(.lostUpstream)` events and the notifications they report.
    package var upstreamGapEvents: UInt64 = 0
    package var upstreamLost: UInt64 = 0
    /// `.gap(.droppedLocalBuffer)` events and the notifications they report.
    package var localGapEvents: UInt64 = 0
    package var localDropped: UInt64 = 0
    /// Gaps of any other cause (none expected).
    package var otherLost: UInt64 = 0
    /// Monotonic times of the first and the last event handled, ns.
    package var firstAt: UInt64 = 0
    package var lastAt: UInt64 = 0
    /// Handler checksum (keeps the payload reads from being optimised away).
    package var checksum: UInt64 = 0

    package init() {}
}

/// What the overload subscriber reports (its `result` line).
package struct OverloadSubscriberResult: Codable, Sendable {
    package var event = "result"
    package var policy: OverloadPolicy
    package var capacity: Int
    package var handlerMicroseconds: Int
    package var highWaterMark: Int32
    /// The loop's own in-band view.
    package var consumed: OverloadConsumed
    /// The subscription's counters once the loop ended (its iterator gone).
    package var subscription: OverloadSubscriptionCounters
    /// The bus's counters after close.
    package var bus: OverloadBusCounters
    /// How the loop ended: `endOfStream` (the publisher's end-of-stream record was processed and
    /// every event before it consumed), `publisherExited` (no end-of-stream record; the runner said
    /// the publisher had exited, and nothing arrived for a second once drained), or `timeout`.
    package var endedBy: String
    /// Subscribed (bus and subscription created) to the first notification handled, ns.
    package var subscribedToFirstNanoseconds: UInt64
    /// First to last event handled, ns.
    package var consumingNanoseconds: UInt64
    /// The end-of-stream record seen (bus counter) to the loop's end, ns (0 when never seen).
    package var drainAfterEndOfStreamNanoseconds: UInt64
    /// This process's `VmRSS` every `intervalMilliseconds`, and its `VmHWM`.
    package var memory: MemorySamples

    /// Notifications handled per second while consuming.
    package var consumeRate: Double { ratePerSecond(Int(consumed.notifications), consumingNanoseconds) }
}

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
