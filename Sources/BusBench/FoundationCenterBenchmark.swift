import Foundation
import Synchronization

/// One in-process measurement: `count` notifications, how long they took, what arrived.
package struct InProcessSample: Codable, Sendable, Equatable {
    /// Notifications posted.
    package var posted: Int
    /// Notifications the consumer saw.
    package var delivered: Int
    /// First post to last delivery, ns.
    package var elapsedNanoseconds: UInt64
    /// delivered / elapsed, per second.
    package var rate: Double
    /// Payload bytes the consumer read (proves it touched every payload).
    package var payloadBytes: Int
}

/// Foundation's `NotificationCenter` in one process, the row the embedded bus is compared with.
///
/// On Linux there is no `notifications(named:)` or Combine `publisher(for:)`: a consumer gets a
/// block observer (`addObserver(forName:object:queue:using:)`), called synchronously by `post`.
package enum FoundationCenterBenchmark {
    static let name = Foundation.Notification.Name("bench.data")

    /// `post(name:object:userInfo:)` with a 1-entry `userInfo` holding the payload (`[UInt8]`) to
    /// one block observer (`queue: nil`: runs inside `post`), which reads the payload back.
    package static func blockObserver(count: Int, size: Int) -> InProcessSample {
        let center = NotificationCenter()
        let sink = Sink()
        let token = center.addObserver(forName: name, object: nil, queue: nil) { notification in
            if let payload = notification.userInfo?["payload"] as? [UInt8] { sink.add(payload.count) }
        }
        let payload = [UInt8](repeating: 0xAB, count: size)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count { center.post(name: name, object: nil, userInfo: ["payload": payload]) }
        let elapsed = (clock.now - start).nanoseconds
        center.removeObserver(token)
        let (delivered, bytes) = sink.totals
        return InProcessSample(
            posted: count, delivered: delivered, elapsedNanoseconds: elapsed, rate: ratePerSecond(delivered, elapsed),
            payloadBytes: bytes)
    }

    /// The same posts bridged into an `AsyncStream` (unbounded) for a `for await` consumer task:
    /// what a Linux developer writes for want of `notifications(named:)`. For information.
    package static func asyncStreamBridge(count: Int, size: Int) async -> InProcessSample {
        let center = NotificationCenter()
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        let token = center.addObserver(forName: name, object: nil, queue: nil) { notification in
            if let payload = notification.userInfo?["payload"] as? [UInt8] { continuation.yield(payload) }
        }
        let consumer = Task { () -> (Int, Int, ContinuousClock.Instant) in
            var delivered = 0
            var bytes = 0
            for await payload in stream {
                delivered += 1
                bytes += payload.count
                if delivered == count { break }
            }
            return (delivered, bytes, ContinuousClock.now)
        }
        let payload = [UInt8](repeating: 0xAB, count: size)
        let start = ContinuousClock.now
        for _ in 0..<count { center.post(name: name, object: nil, userInfo: ["payload": payload]) }
        continuation.finish()
        let (delivered, bytes, end) = await consumer.value
        center.removeObserver(token)
        let elapsed = (end - start).nanoseconds
        return InProcessSample(
            posted: count, delivered: delivered, elapsedNanoseconds: elapsed, rate: ratePerSecond(delivered, elapsed),
            payloadBytes: bytes)
    }

    private final class Sink: Sendable {
        private let state = Mutex<(count: Int, bytes: Int)>((0, 0))

        func add(_ bytes: Int) {
            state.withLock { state in
                state.count += 1
                state.bytes += bytes
            }
        }

        var totals: (Int, Int) { state.withLock { ($0.count, $0.bytes) } }
    }
}
