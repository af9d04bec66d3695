import Foundation
import NotificationBus
import Synchronization

/// Issue 42's in-process targets: the embedded bus's typed path (no coding in one process)
/// against its own byte path with the same JSON body, and against Foundation's own typed
/// messages (`NotificationCenter.AsyncMessage`, the same `BenchOrder` type), in one invocation.
package enum TypedInProcessBenchmark {
    /// Posts `count` `BenchOrder`s on an embedded bus to a `for await` loop over
    /// `messages(of:)` in another task; back-pressure on, nothing lost. Returns the sample and
    /// the JSON the bus made and read (0 and 0: the values travelled as they are).
    package static func typed(
        count: Int, highWaterMark: Int32, timeout: Duration
    ) async throws -> (sample: InProcessSample, encoded: UInt64, decoded: UInt64) {
        let bus = try Bus(configuration(highWaterMark))
        let sequence = try bus.messages(of: BenchOrder.self, buffering: .suspendProducer(capacity: 8192))
        try await bus.waitForSubscribers(count: 1, matching: BenchOrder.busName, timeout: timeout)
        let consumer = Task { () -> (Int, Int, UInt64) in
            var delivered = 0
            var sum = 0
            for await order in sequence {
                delivered += 1
                sum &+= order.id &+ order.customer.utf8.count
                if delivered == count { break }
            }
            return (delivered, sum, Timestamps.monotonicNanoseconds())
        }
        let watchdog = Task {
            // Cancelled when the run finishes first: the check below then does nothing.
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { sequence.cancel() }
        }
        let start = Timestamps.monotonicNanoseconds()
        let producer = Task {
            for id in 0..<count { try await bus.post(BenchOrder(id: id)) }
        }
        let posting = await producer.result
        if case .failure = posting { sequence.cancel() }
        let (delivered, sum, end) = await consumer.value
        watchdog.cancel()
        let stats = bus.stats
        await bus.close()
        try posting.get()
        let elapsed = end - start
        let sample = InProcessSample(
            posted: count, delivered: delivered, elapsedNanoseconds: elapsed, rate: ratePerSecond(delivered, elapsed),
            payloadBytes: sum)
        return (sample, stats.messagesEncoded, stats.messagesDecoded)
    }

    /// The same on the byte API: each post's JSON built by hand (`BenchOrder.handBuiltJSON`),
    /// the consumer reads the payload's bytes: the bus's embedded byte path with the same body.
    package static func bytes(count: Int, highWaterMark: Int32, timeout: Duration) async throws -> InProcessSample {
        let bus = try Bus(configuration(highWaterMark))
        let name = BenchOrder.busName
        let sequence = try bus.notifications(named: NamePattern(exactly: name), buffering: .suspendProducer(capacity: 8192))
        try await bus.waitForSubscribers(count: 1, matching: name, timeout: timeout)
        let consumer = Task { () -> (Int, Int, UInt64) in
            var delivered = 0
            var bytes = 0
            for await notification in sequence {
                delivered += 1
                bytes &+= notification.payload.count
                if delivered == count { break }
            }
            return (delivered, bytes, Timestamps.monotonicNanoseconds())
        }
        let watchdog = Task {
            // Cancelled when the run finishes first: the check below then does nothing.
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { sequence.cancel() }
        }
        let start = Timestamps.monotonicNanoseconds()
        let producer = Task {
            for id in 0..<count {
                try await bus.post(name: name, payload: BenchOrder.handBuiltJSON(id: id), contentType: .json)
            }
        }
        let posting = await producer.result
        if case .failure = posting { sequence.cancel() }
        let (delivered, bytes, end) = await consumer.value
        watchdog.cancel()
        await bus.close()
        try posting.get()
        let elapsed = end - start
        return InProcessSample(
            posted: count, delivered: delivered, elapsedNanoseconds: elapsed, rate: ratePerSecond(delivered, elapsed),
            payloadBytes: bytes)
    }

    /// Foundation's typed messages: `center.post(BenchOrder)` to one async observer
    /// (`addObserver(of:for:)`), until it has seen them all.
    package static func foundationObserver(count: Int) async -> InProcessSample {
        let center = NotificationCenter()
        let seen = Atomic<Int>(0)
        let (done, finished) = AsyncStream.makeStream(of: Void.self)
        let token = center.addObserver(of: BenchOrder.Subject.self, for: NotificationCenter.BaseMessageIdentifier<BenchOrder>()) {
            _ in
            if seen.add(1, ordering: .relaxed).newValue == count { finished.yield() }
        }
        let start = ContinuousClock.now
        for id in 0..<count { center.post(BenchOrder(id: id)) }
        for await _ in done { break }
        let elapsed = (ContinuousClock.now - start).nanoseconds
        center.removeObserver(token)
        let delivered = seen.load(ordering: .relaxed)
        return InProcessSample(
            posted: count, delivered: delivered, elapsedNanoseconds: elapsed, rate: ratePerSecond(delivered, elapsed),
            payloadBytes: 0)
    }

    /// Foundation's typed messages as an `AsyncSequence` (`messages(of:for:bufferSize:)`, a
    /// buffer of `count`, so none is dropped) read by a `for await` task. Posting starts once the
    /// consumer holds its iterator (where Foundation may register its observer); a run that
    /// has not delivered everything after `timeout` ends there, with what it delivered.
    package static func foundationSequence(count: Int, timeout: Duration) async -> InProcessSample {
        let center = NotificationCenter()
        let messages = center.messages(
            of: BenchOrder.Subject.self, for: NotificationCenter.BaseMessageIdentifier<BenchOrder>(), bufferSize: count)
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task { () -> (Int, ContinuousClock.Instant) in
            var delivered = 0
            var iterator = messages.makeAsyncIterator()
            starting.yield()
            do {
                while delivered < count, try await iterator.next() != nil { delivered += 1 }
            } catch {
                // Cancelled by the watchdog: the run ends with what was delivered.
            }
            return (delivered, ContinuousClock.now)
        }
        for await _ in started { break }
        let watchdog = Task {
            // Cancelled when the run finishes first: cancelling the consumer then does nothing.
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { consumer.cancel() }
        }
        defer { watchdog.cancel() }
        let start = ContinuousClock.now
        for id in 0..<count { center.post(BenchOrder(id: id)) }
        let (delivered, end) = await consumer.value
        let elapsed = (end - start).nanoseconds
        return InProcessSample(
            posted: count, delivered: delivered, elapsedNanoseconds: elapsed, rate: ratePerSecond(delivered, elapsed),
            payloadBytes: 0)
    }

    private static func configuration(_ highWaterMark: Int32) -> BusConfiguration {
        var configuration = BusConfiguration.embedded()
        configuration.publisherBackpressure = true
        configuration.sendHighWaterMark = highWaterMark
        configuration.receiveHighWaterMark = highWaterMark
        return configuration
    }
}
