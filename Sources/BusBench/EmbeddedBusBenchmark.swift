import NotificationBus

/// The embedded bus in one process: `Bus(.embedded())` (inproc://), one task posting, one
/// `for await` consumer task: the bus's answer to Foundation's in-process `NotificationCenter`.
package enum EmbeddedBusBenchmark {
    /// Posts `count` notifications of `size` payload bytes from one task to a `for await` loop in
    /// another; back-pressure on (`ZMQ_XPUB_NODROP`) and `.suspendProducer`, so nothing is lost.
    /// Returns the sample and the subscription's counters (received must equal `count`).
    package static func run(
        count: Int, size: Int, highWaterMark: Int32, timeout: Duration
    ) async throws -> (InProcessSample, SubscriptionCounters) {
        var configuration = BusConfiguration.embedded()
        configuration.publisherBackpressure = true
        configuration.sendHighWaterMark = highWaterMark
        configuration.receiveHighWaterMark = highWaterMark
        let bus = try Bus(configuration)
        let name = try NotificationName(ThroughputOptions.notificationName)
        let pattern = NamePattern(exactly: name)
        let sequence = try bus.notifications(named: pattern, buffering: .suspendProducer(capacity: 8192))
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
        let payload = [UInt8](repeating: 0xAB, count: size)
        let start = Timestamps.monotonicNanoseconds()
        let producer = Task {
            for _ in 0..<count { try await bus.post(name: name, payload: payload) }
        }
        let posting = await producer.result
        if case .failure = posting { sequence.cancel() }
        let (delivered, bytes, end) = await consumer.value
        watchdog.cancel()
        let counters = sequence.stats
        await bus.close()
        try posting.get()
        let elapsed = end - start
        return (
            InProcessSample(
                posted: count, delivered: delivered, elapsedNanoseconds: elapsed,
                rate: ratePerSecond(delivered, elapsed), payloadBytes: bytes),
            counters
        )
    }
}
