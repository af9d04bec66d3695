import Foundation
import NotificationBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What one bus worker process of `nbus bench throughput` does (`nbus bench worker throughput`).
package struct BusWorkerOptions: Sendable, Codable {
    /// Which side of the pair this process is.
    package enum Role: String, Sendable, CaseIterable, Codable {
        /// `Bus(.directPublisher(bind:))`, back-pressure on; waits for the subscriber, posts, closes.
        case publisher
        /// `Bus(.directSubscriber(connect:))`; one `for await` loop until `count` notifications.
        case subscriber
    }

    package var role: Role
    /// Where the publisher binds (`ipc://...`, `tcp://127.0.0.1:*`) or the subscriber connects.
    package var endpoint: String
    /// Notifications to post / to consume.
    package var count: Int
    /// Payload bytes per notification.
    package var size: Int = 256
    /// ZeroMQ send and receive high-water marks.
    package var highWaterMark: Int32 = 10_000
    /// Publisher pacing, notifications per second; nil posts as fast as `post` returns.
    package var rate: Int?
    /// The notification name.
    package var name: String = ThroughputOptions.notificationName
    /// Seconds until the worker gives up (the subscriber reports what it got; both then exit).
    package var timeoutSeconds: Int = 120
    /// Seconds without a notification (after the first) before the subscriber gives up.
    package var idleTimeoutSeconds: Int = 15
    /// Exit as soon as stdin reaches end of file: the parent benchmark holds the pipe's write end.
    package var exitOnStandardInputEOF = false
    /// `BusConfiguration.idleSpin` (microseconds) for the worker's bus (0: sleep when idle).
    package var idleSpinMicroseconds = 0
    /// Publisher: run the unpaced posting loop on the bus's own thread (`bus.executor`).
    package var onBusExecutor = false
    /// Subscriber: consume in a plain task, as application code that asks for no executor,
    /// instead of on `bus.executor` (where an nbus command consumes by default: no hand-off).
    package var plainTask = false
    /// Publisher: connect to `endpoint` (a broker's frontend) with the bus's brokered defaults,
    /// instead of binding it with back-pressure forced on.
    package var connectPublisher = false
    /// Subscriber: read the clock for every n-th notification's latency (1: every one). The C
    /// baseline reads no clock per message in a throughput run; sampling keeps the bus's consumer
    /// comparable (the clock was ~2% of its CPU), and the first and the last are always timed.
    package var latencySampleEvery = 1
    /// Publisher: `BusConfiguration.batching`'s largest frame in bytes (0: off).
    package var batchBytes = Batching.on.maximumFrameBytes
    /// What is posted and read (issue 42's broker target): `size` bytes, or the five-field
    /// `BenchOrder` as JSON built by hand and read as bytes, or the same as a message type
    /// (`post(BenchOrder)` to `messageEnvelopes(of:)`: encoded and decoded) with its field
    /// coding (`typed`) or its `Codable` coding (`typedCodable`).
    package var body = Body.bytes

    /// What a throughput run posts.
    package enum Body: String, Sendable, Codable, CaseIterable {
        case bytes, json, typed, typedCodable

        /// A message type's post and subscription (either coding).
        var isTyped: Bool { self == .typed || self == .typedCodable }
    }

    /// Options with the required values; the rest keep their defaults.
    package init(role: Role, endpoint: String, count: Int) {
        self.role = role
        self.endpoint = endpoint
        self.count = count
    }

    /// The command line that runs this worker through `command` (see `BenchWorkerCommand`).
    func arguments(command: [String]) -> [String] {
        BenchWorkerCommand.arguments(command, .throughput, self)
    }
}

extension BusWorkerOptions: BenchWorkerOptions {
    static let template = BusWorkerOptions(role: .publisher, endpoint: "", count: 0)
    static let requiredKeys = ["role", "endpoint", "count"]
    static let optionalKeys = ["rate"]
    static let example = #"{"role":"publisher","endpoint":"ipc:///tmp/w.sock","count":20000,"rate":10000}"#

    var outOfRange: String? {
        typealias C = BenchWorkerCommand
        return C.range("count", count, 0...1_000_000_000) ?? C.range("size", size, 0...(64 << 20))
            ?? C.range("highWaterMark", highWaterMark, 0...Int32.max) ?? rate.flatMap { C.range("rate", $0, 1...1_000_000_000) }
            ?? C.range("timeoutSeconds", timeoutSeconds, 1...31_536_000) ?? C.range("idleTimeoutSeconds", idleTimeoutSeconds, 1...31_536_000)
            ?? C.range("idleSpinMicroseconds", idleSpinMicroseconds, 0...1_000_000)
            ?? C.range("latencySampleEvery", latencySampleEvery, 1...1_000_000_000)
            ?? C.range("batchBytes", batchBytes, 0...(64 << 20))
    }
}

/// One side of the two-process bus benchmark. It talks to the runner in JSON lines on stdout:
/// the publisher prints `{"event":"bound","endpoint":...}` then `{"event":"done",...}`
/// (`BusPublisherResult`); the subscriber prints `{"event":"subscribed"}` then
/// `{"event":"result",...}` (`BusSubscriberResult`). Diagnostics go to stderr.
package enum BusWorker {
    /// Runs the worker; returns the process exit status (0: success, 1: incomplete or failed).
    package static func run(_ options: BusWorkerOptions) async -> Int32 {
        // The hard deadline comes a little after the soft one (`timeoutSeconds`).
        await WorkerProcess.run(
            kind: .throughput, role: options.role.rawValue, hardDeadlineSeconds: min(options.timeoutSeconds, 31_536_000) + 5,
            exitWhenRunnerGone: options.exitOnStandardInputEOF
        ) {
            switch options.role {
            case .publisher: return try await runPublisher(options)
            case .subscriber: return try await runSubscriber(options)
            }
        }
    }

    // MARK: Publisher

    private static func runPublisher(_ options: BusWorkerOptions) async throws -> Int32 {
        BenchOrder.codableCoding.store(options.body == .typedCodable, ordering: .relaxed)
        let name = options.body == .bytes ? try NotificationName(options.name) : BenchOrder.busName
        var configuration: BusConfiguration
        if options.connectPublisher {
            // The brokered defaults: back-pressure is on because the publisher only connects.
            configuration = BusConfiguration(publish: [.connect(options.endpoint)])
        } else {
            configuration = BusConfiguration.directPublisher(bind: options.endpoint)
            configuration.publisherBackpressure = true
        }
        configuration.sendHighWaterMark = options.highWaterMark
        configuration.receiveHighWaterMark = options.highWaterMark
        configuration.closeTimeout = .seconds(options.timeoutSeconds)
        configuration.idleSpin = .microseconds(options.idleSpinMicroseconds)
        configuration.batching = Batching(maximumFrameBytes: options.batchBytes)
        let bus = try Bus(configuration)
        WorkerProcess.emitJSON(BoundEvent(endpoint: bus.endpoints.first ?? options.endpoint))

        // Real readiness: the subscriber's subscription (and presence) reached this XPUB.
        try await bus.waitForSubscribers(count: 1, matching: name, timeout: .seconds(options.timeoutSeconds))

        let payload = [UInt8](repeating: 0xAB, count: options.size)
        let start = Timestamps.monotonicNanoseconds()
        if let rate = options.rate, rate > 0 {
            try await postPaced(bus: bus, name: name, payload: payload, count: options.count, rate: rate)
        } else if options.onBusExecutor {
            // The posting loop on the bus's own I/O thread: no hand-off per post.
            let count = options.count
            try await Task(executorPreference: bus.executor) {
                for _ in 0..<count { try await bus.post(name: name, payload: payload) }
            }.value
        } else if options.body.isTyped {
            for id in 0..<options.count { try await bus.post(BenchOrder(id: id)) }
        } else if options.body == .json {
            for id in 0..<options.count {
                try await bus.post(name: name, payload: BenchOrder.handBuiltJSON(id: id), contentType: .json)
            }
        } else {
            for _ in 0..<options.count { try await bus.post(name: name, payload: payload) }
        }
        let posted = Timestamps.monotonicNanoseconds()
        let stats = await bus.close()
        let closed = Timestamps.monotonicNanoseconds()
        WorkerProcess.emitJSON(
            BusPublisherResult(
                count: options.count, postNanoseconds: posted - start, closeNanoseconds: closed - posted,
                requestedRate: options.rate ?? 0, bus: BusCounters(stats)))
        guard stats.unsent == 0 else {
            WorkerProcess.writeStandardError("nbus bench worker throughput (publisher): \(stats.unsent) notification(s) unsent at close\n")
            return 1
        }
        return 0
    }

    /// Paced the way the C baseline paces: a thread of its own sleeps to each message's due time
    /// (`clock_nanosleep`, absolute, monotonic: start + i/rate) and posts with `postNow`, so the
    /// stamp-to-delivery latency is the bus's. Pacing with `Task.sleep` goes through Dispatch's
    /// timers: measured about 5 context switches and 90 us of CPU per message at 10k/s, which
    /// loaded both cores of the machine and the very latency being measured.
    private static func postPaced(
        bus: Bus, name: NotificationName, payload: [UInt8], count: Int, rate: Int
    ) async throws {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<BusError?, Never>) in
            Thread.detachNewThread {
                let interval = 1e9 / Double(rate)
                let start = Timestamps.monotonicNanoseconds()
                var failure: BusError?
                posting: for index in 0..<count {
                    sleepUntil(monotonic: start + UInt64(Double(index) * interval))
                    while true {
                        do throws(BusError) {
                            try bus.postNow(name: name, payload: payload)
                            break
                        } catch let refusal where refusal.code == .outboundQueueFull {
                            // Behind (the bus refuses more): wait a little, never drop.
                            sleepUntil(monotonic: Timestamps.monotonicNanoseconds() + 50_000)
                        } catch {
                            failure = error
                            break posting
                        }
                    }
                }
                continuation.resume(returning: failure)
            }
        }
        if let outcome { throw outcome }
    }

    /// Sleeps the calling thread until `deadline` on the monotonic clock (absolute, EINTR retried).
    private static func sleepUntil(monotonic deadline: UInt64) {
        var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
    }

    // MARK: Subscriber

    private static func runSubscriber(_ options: BusWorkerOptions) async throws -> Int32 {
        BenchOrder.codableCoding.store(options.body == .typedCodable, ordering: .relaxed)
        let name = options.body == .bytes ? try NotificationName(options.name) : BenchOrder.busName
        var configuration = BusConfiguration.directSubscriber(connect: [options.endpoint])
        configuration.receiveHighWaterMark = options.highWaterMark
        configuration.sendHighWaterMark = options.highWaterMark
        configuration.idleSpin = .microseconds(options.idleSpinMicroseconds)
        let bus = try Bus(configuration)
        let pattern = NamePattern(exactly: name)
        // Typed: each notification decoded as a `BenchOrder` in the loop, with its metadata.
        let buffering = BufferingPolicy.suspendProducer(capacity: 8192)
        let typed = options.body.isTyped ? try bus.messageEnvelopes(of: BenchOrder.self, buffering: buffering) : nil
        let sequence = typed == nil ? try bus.notifications(named: pattern, buffering: buffering) : nil
        let cancel = { @Sendable in
            sequence?.cancel()
            typed?.cancel()
        }
        WorkerProcess.emitLine(#"{"event":"subscribed"}"#)

        let progress = Progress()
        let expected = options.count
        let sampleEvery = max(1, options.latencySampleEvery)
        // The loop starts at once: the publisher's waitForSubscribers is the readiness gate, and
        // nothing is buffered ahead of the loop that would flatter the rate.
        let consume = { @Sendable () async -> Consumed in
            var consumed = Consumed()
            var untilSample = 0
            var orders = typed?.makeAsyncIterator()
            var notifications = sequence?.makeAsyncIterator()
            while true {
                let notification: BusNotification
                if orders != nil {
                    guard let order = await orders?.next() else { break }
                    // Touch the decoded value, as the byte runs touch their payload.
                    consumed.payloadBytes &+= order.message.customer.utf8.count
                    notification = order.notification
                } else {
                    guard let next = await notifications?.next() else { break }
                    notification = next
                    consumed.payloadBytes &+= notification.payload.count
                }
                consumed.count += 1
                untilSample -= 1
                if untilSample <= 0 || consumed.count == 1 || consumed.count == expected {
                    // Timed: the first, the last, and every `sampleEvery`-th between. A run that
                    // ends by timeout keeps the last timed one as its end.
                    untilSample = sampleEvery
                    let now = Timestamps.wallClockNanoseconds()
                    if consumed.count == 1 {
                        consumed.first = now
                        consumed.firstStamp = notification.timestamp
                    }
                    consumed.last = now
                    consumed.latency.record(now &- min(now, notification.timestamp))
                }
                if consumed.count & 1023 == 0 { progress.count.store(consumed.count, ordering: .relaxed) }
                if consumed.count == expected {
                    consumed.endedBy = "count"
                    break
                }
            }
            return consumed
        }
        // Measured: `Task(executorPreference: nil)` still marks the task as having a preference,
        // and every executor check on the consumer's path then takes the task's status-record
        // lock (about 5% of the subscriber's CPU). A plain task when no executor is asked for.
        let consumer =
            options.plainTask
            ? Task(operation: consume) : Task(executorPreference: bus.executor, operation: consume)
        let watchdog = Task {
            let deadline = Timestamps.monotonicNanoseconds() + UInt64(options.timeoutSeconds) * 1_000_000_000
            let idleLimit = UInt64(options.idleTimeoutSeconds) * 1_000_000_000
            var lastCount = 0
            var lastChange = Timestamps.monotonicNanoseconds()
            while !Task.isCancelled {
                // The watchdog's tick; cancelled when the run ends, which ends the loop.
                try? await Task.sleep(for: .milliseconds(100))
                let now = Timestamps.monotonicNanoseconds()
                let count = progress.count.load(ordering: .relaxed)
                if count != lastCount {
                    lastCount = count
                    lastChange = now
                }
                if now >= deadline {
                    progress.reason.withLock { $0 = "timeout" }
                } else if count > 0 && now - lastChange >= idleLimit {
                    progress.reason.withLock { $0 = "idle" }
                }
                if progress.reason.withLock({ $0 }) != nil {
                    cancel()
                    return
                }
            }
        }
        var consumed = await consumer.value
        watchdog.cancel()
        if consumed.endedBy.isEmpty { consumed.endedBy = progress.reason.withLock { $0 } ?? "ended" }
        let subscription = typed?.stats ?? sequence?.stats ?? SubscriptionStats()
        let stats = await bus.close()
        let elapsed = consumed.last - consumed.first
        let result = BusSubscriberResult(
            expected: expected, count: consumed.count, elapsedNanoseconds: elapsed,
            rate: ratePerSecond(max(0, consumed.count - 1), elapsed),
            endToEndNanoseconds: consumed.last &- min(consumed.last, consumed.firstStamp),
            latency: consumed.latency.summary, subscription: subscription, bus: BusCounters(stats),
            payloadBytes: consumed.payloadBytes, endedBy: consumed.endedBy)
        WorkerProcess.emitJSON(result)
        if !result.complete {
            WorkerProcess.writeStandardError(
                "nbus bench worker throughput (subscriber): consumed \(consumed.count) of \(expected) (\(consumed.endedBy)); "
                    + "lostUpstream=\(subscription.lostUpstream) droppedLocalBuffer=\(subscription.droppedLocalBuffer) "
                    + "rejected=\(stats.rejectedTotal)\n")
            return 1
        }
        return 0
    }

    private struct Consumed: Sendable {
        var count = 0
        var first: UInt64 = 0
        var last: UInt64 = 0
        var firstStamp: UInt64 = 0
        var payloadBytes = 0
        var latency = LatencyRecorder()
        var endedBy = ""
    }

    private final class Progress: Sendable {
        let count = Atomic<Int>(0)
        let reason = Mutex<String?>(nil)
    }

    private struct BoundEvent: Encodable {
        var event = "bound"
        var endpoint: String
    }
}
