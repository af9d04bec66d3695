import Foundation
import Synchronization
import NotificationBus

/// The peers kit's client on the bus: each mode prints one JSON object as its last line.
package enum PeerClient {
    /// How long the subscriber waits after its last notification before it stops without END.
    static let idleStop: Duration = .seconds(3)
    /// How long it waits for a first notification: the kit's rule is "3 s after its last
    /// message"; counting 3 s from the start instead made a subscriber leave before a publisher
    /// started on a loaded machine (the publisher then waited 30 s for nobody).
    static let firstArrivalLimit: Duration = .seconds(60)

    /// Runs the mode and returns its JSON line.
    package static func run(_ options: PeerClientOptions) async throws -> String {
        try options.validate()
        switch options.mode {
        case .sub: return try await subscribe(options)
        case .pub: return try await publish(options)
        case .ping: return try await ping(options)
        case .pong: return try await pong(options)
        }
    }

    /// Creates the ready file, and says so on stderr (the kit reads only stdout's last line).
    private static func markReady(_ path: String?) throws {
        if let path, !FileManager.default.createFile(atPath: path, contents: nil) {
            throw BenchError.invalidOptions("cannot create the ready file \(path)")
        }
        FileHandle.standardError.write(Data("peer-client: subscribed\n".utf8))
    }

    private static func json(_ fields: KeyValuePairs<String, Any>) -> String {
        let body = fields.map { key, value -> String in
            switch value {
            case let text as String: return "\"\(key)\":\"\(text)\""
            case let flag as Bool: return "\"\(key)\":\(flag)"
            case let number as Double: return "\"\(key)\":\(String(format: "%.3f", number))"
            default: return "\"\(key)\":\(value)"
            }
        }
        return "{" + body.joined(separator: ",") + "}"
    }

    // MARK: sub

    /// Subscribes, marks ready, counts until END (a payload starting with `E`) or 3 s of silence.
    static func subscribe(_ options: PeerClientOptions) async throws -> String {
        let bus = try Bus(options.configuration(BusConfiguration(subscribe: options.backends.map(Attachment.connect))))
        let notifications = try bus.notifications(named: options.subject)
        try markReady(options.readyFile)
        let lastArrival = LastArrival()
        // Tasks an nbus command starts itself run on the bus's own thread (`bus.executor`): each
        // batch reaches the loop without a thread wake-up, as raw ZeroMQ's reader has none. A
        // handler with work runs where a user's would, on the global pool: busy on the bus's
        // thread, it would also stop the bus reading its socket.
        let work = Duration.nanoseconds(options.workNanoseconds)
        let executor = options.loopExecutor(bus)
        let consumer = Task(executorPreference: executor) { () -> (received: UInt64, first: UInt64, last: UInt64, end: Bool) in
            var received: UInt64 = 0
            var first: UInt64 = 0
            var last: UInt64 = 0
            for await notification in notifications {
                let now = wallClockNanoseconds()
                if notification.payload.first == UInt8(ascii: "E") { return (received, first, last, true) }
                received += 1
                if received == 1 { first = now }
                last = now
                lastArrival.set(now)
                if work > .zero {
                    let until = ContinuousClock.now + work
                    while ContinuousClock.now < until {}
                }
            }
            return (received, first, last, false)
        }
        // The idle stop: a watcher that ends the loop 3 s after the last arrival, or 60 s after
        // the start when nothing came.
        let started = wallClockNanoseconds()
        let watcher = Task {
            while !Task.isCancelled {
                // The idle check's tick; cancelled when the consumer ends, which ends the loop.
                try? await Task.sleep(for: .milliseconds(100))
                let last = lastArrival.get()
                let (since, limit) = last == 0 ? (started, firstArrivalLimit) : (last, idleStop)
                if wallClockNanoseconds() &- since > UInt64(limit.components.seconds) * 1_000_000_000 {
                    consumer.cancel()
                    return
                }
            }
        }
        let result = await consumer.value
        watcher.cancel()
        let stats = notifications.stats
        _ = await bus.close()
        let seconds = Double(result.last &- result.first) / 1e9
        let rate = result.last > result.first ? Double(result.received - 1) / seconds : 0
        return json([
            "role": "sub", "received": result.received, "first_ns": result.first, "last_ns": result.last,
            "end_marker": result.end, "rate": rate, "lost_upstream": stats.lostUpstream,
            "dropped_local_buffer": stats.droppedLocalBuffer,
        ])
    }

    // MARK: pub

    /// Waits for a subscriber of the END name, posts `count` notifications cycling the subjects
    /// (bytes 1...4 carry the counter), then END, then closes (flushing).
    static func publish(_ options: PeerClientOptions) async throws -> String {
        let names = try options.subject.split(separator: ",").map { try NotificationName(String($0)) }
        let end = try options.endSubject.map { try NotificationName($0) } ?? names[0]
        let bus = try Bus(options.configuration(BusConfiguration(publish: options.frontends.map(Attachment.connect))))
        try await bus.waitForSubscribers(count: 1, matching: end, timeout: .seconds(30))
        var payload = [UInt8](repeating: UInt8(ascii: "D"), count: options.size)
        let start = wallClockNanoseconds()
        for index in 0..<options.count {
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: index).littleEndian) { counter in
                for offset in 0..<min(4, payload.count - 1) { payload[1 + offset] = counter[offset] }
            }
            try await bus.post(name: names[index % names.count], payload: payload)
        }
        let published = wallClockNanoseconds()
        try await bus.post(name: end, payload: [UInt8(ascii: "E")])
        let stats = await bus.close()
        let flushed = wallClockNanoseconds()
        let rate = Double(options.count) / (Double(flushed &- start) / 1e9)
        return json([
            "role": "pub", "n": options.count, "start_ns": start, "publish_done_ns": published, "flush_done_ns": flushed,
            "rate": rate, "unsent": stats.unsent,
        ])
    }

    // MARK: ping / pong

    /// Answers each `ping` with the same payload on `pong` until a payload starting with `Q`.
    static func pong(_ options: PeerClientOptions) async throws -> String {
        let bus = try Bus(options.configuration(.brokered(frontends: options.frontends, backends: options.backends)))
        let pings = try bus.notifications(named: "ping")
        let pongName = NotificationName("pong")
        try markReady(options.readyFile)
        // On the bus's own thread (the README's way): a ping is answered in the round that read
        // it, no hand-off. `--loop plain`: on the global pool.
        let answered = try await Task(executorPreference: options.loopExecutor(bus)) {
            var answered = 0
            for await ping in pings {
                if ping.payload.first == UInt8(ascii: "Q") { break }
                try await bus.post(name: pongName, payload: ping.payload)
                answered += 1
            }
            return answered
        }.value
        _ = await bus.close()
        return json(["role": "pong", "answered": answered])
    }

    /// Measures round trips to a ponger: `warmup` unmeasured, then `count`; percentiles by
    /// nearest rank, in microseconds.
    static func ping(_ options: PeerClientOptions) async throws -> String {
        let bus = try Bus(options.configuration(.brokered(frontends: options.frontends, backends: options.backends)))
        let pongs = try bus.notifications(named: "pong")
        let pingName = NotificationName("ping")
        // Both directions live: the ponger's subscription reached this publisher, and this
        // subscription reached the ponger's publisher (which echoes the readiness token).
        try await bus.waitForSubscribers(count: 1, matching: pingName, timeout: .seconds(30))
        try await bus.ready(NamePattern("pong"), timeout: .seconds(30))
        // On the bus's own thread (the README's way): a pong resumes this loop in the round that
        // read it. `--loop plain`: on the global pool.
        let rtts = try await Task(executorPreference: options.loopExecutor(bus)) {
            try await pingLoop(bus: bus, pongs: pongs, pingName: pingName, options: options)
        }.value
        try await bus.post(name: pingName, payload: [UInt8(ascii: "Q")])
        _ = await bus.close()
        if let dump = options.dumpFile {
            try rtts.map(String.init).joined(separator: "\n").appending("\n").write(toFile: dump, atomically: false, encoding: .utf8)
        }
        let sorted = rtts.sorted()
        func percentile(_ p: Double) -> Double {
            let rank = min(sorted.count, max(1, Int((p * Double(sorted.count)).rounded(.up))))
            return Double(sorted[rank - 1]) / 1_000
        }
        let mean = Double(rtts.reduce(0, +)) / Double(max(1, rtts.count)) / 1_000
        return json([
            "role": "ping", "n": rtts.count, "p50_us": percentile(0.5), "p90_us": percentile(0.9),
            "p99_us": percentile(0.99), "p999_us": percentile(0.999), "max_us": Double(sorted.last ?? 0) / 1_000,
            "mean_us": mean,
        ])
    }
}

extension PeerClient {
    /// `warmup` unmeasured round trips, then `count` measured ones (nanoseconds).
    fileprivate static func pingLoop(
        bus: Bus, pongs: NotificationSequence, pingName: NotificationName, options: PeerClientOptions
    ) async throws -> [UInt64] {
        var iterator = pongs.makeAsyncIterator()
        var payload = [UInt8](repeating: UInt8(ascii: "P"), count: max(5, min(options.size, 64)))
        var rtts: [UInt64] = []
        rtts.reserveCapacity(options.count)
        for index in 0..<(options.warmup + options.count) {
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: index).littleEndian) { counter in
                for offset in 0..<4 { payload[1 + offset] = counter[offset] }
            }
            let sent = Timestamps.monotonicNanoseconds()
            try await bus.post(name: pingName, payload: payload)
            while true {
                guard let answer = await iterator.next() else { throw BenchError.invalidOptions("the pong stream ended") }
                if answer.payload.count >= 5, Array(answer.payload[1..<5]) == Array(payload[1..<5]) { break }
            }
            if index >= options.warmup { rtts.append(Timestamps.monotonicNanoseconds() &- sent) }
        }
        return rtts
    }
}

/// The subscriber's last arrival time, shared with its idle watcher.
private final class LastArrival: Sendable {
    private let value = Atomic<UInt64>(0)
    func set(_ nanoseconds: UInt64) { value.store(nanoseconds, ordering: .relaxed) }
    func get() -> UInt64 { value.load(ordering: .relaxed) }
}

/// `CLOCK_REALTIME` in nanoseconds: the peers kit's `*_ns` fields are wall clock.
private func wallClockNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}
