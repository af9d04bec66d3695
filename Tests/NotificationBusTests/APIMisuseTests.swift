import Synchronization
import TestSupport
import Testing
@testable import NotificationBus

/// What a Swift developer may do with the API that it was not shaped for: never a crash, a hang or
/// a silent loss (each of these was reproduced by a review before it was fixed).
@Suite("API misuse and edge cases", .timeLimit(.minutes(1)))
struct APIMisuseTests {
    @Test("Two tasks iterating one sequence share its notifications: each exactly once, no crash")
    func twoTasksShareOneSequence() async throws {
        let bus = try Bus(.embedded())
        let sequence = try bus.notifications(named: "a.>")
        let total = 2_000
        let taken = Atomic<Int>(0)
        let consume = { @Sendable () async -> [UInt64] in
            var sequences: [UInt64] = []
            for await notification in sequence {
                sequences.append(notification.sequence)
                if taken.add(1, ordering: .relaxed).newValue == total { sequence.cancel() }
            }
            return sequences
        }
        let first = Task(operation: consume)
        let second = Task(operation: consume)
        for i in 0..<total { try await bus.post(name: "a.b", payload: [UInt8(i & 0xFF)]) }
        let all = await first.value(within: .seconds(30)) + second.value(within: .seconds(30))
        #expect(all.sorted() == Array(1...UInt64(total)))
        let stats = sequence.stats
        #expect(stats.received == UInt64(total) && stats.delivered == UInt64(total), "\(stats)")
        await bus.close()
    }

    @Test("Leaving a loop and iterating again goes on where it left off: nothing skipped")
    func breakAndIterateAgain() async throws {
        let bus = try Bus(.embedded())
        let sequence = try bus.notifications(named: "b.>")
        for _ in 1...10 { try await bus.post(name: "b.x") }
        #expect(await sequence.first(1).map(\.sequence) == [1])
        try await bus.post(name: "b.x")
        let seen = await sequence.collect { $0.sequence == 11 }.map(\.sequence)
        #expect(seen == Array(2...11))
        let stats = sequence.stats
        #expect(stats.delivered == 11 && stats.discardedAtEnd == 0 && stats.buffered == 0, "\(stats)")
        await bus.close()
    }

    @Test("A cancelled loop ends at its next element while notifications keep coming")
    func cancelledLoopEndsUnderLoad() async throws {
        let bus = try Bus(.embedded())
        let sequence = try bus.notifications(named: "c.>")
        let producing = Task {
            // Bounded: at most 200,000 posts, stopped as soon as the consumer is done.
            for _ in 0..<200_000 where !Task.isCancelled { try? await bus.post(name: "c.d") }
        }
        let consumer = Task {
            var afterCancel = 0
            for await _ in sequence {
                if Task.isCancelled { afterCancel += 1 } else { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return afterCancel
        }
        #expect(await consumer.value(within: .seconds(30)) == 0)
        producing.cancel()
        _ = await producing.value(within: .seconds(30))
        let stats = sequence.stats
        // Exact accounts: all received were delivered (1), discarded at the end, or still counted buffered.
        #expect(stats.delivered == 1, "\(stats)")
        #expect(stats.received == stats.delivered + stats.discardedAtEnd + stats.droppedLocalBuffer + stats.buffered, "\(stats)")
        await bus.close()
    }

    @Test("A post suspended on a full outbound queue throws .cancelled when its task is cancelled")
    func cancelledPostReturns() async throws {
        var configuration = BusConfiguration.embedded()
        configuration.outboundCapacity = 2
        configuration.closeTimeout = .milliseconds(100)  // what is queued cannot go anywhere: do not wait 2 s
        let bus = try Bus(configuration)
        // Nobody reads it, so the I/O thread stops and the outbound queue fills.
        let stalled = try bus.notifications(named: "p.>", buffering: .suspendProducer(capacity: 1))
        let posting = Task { () async -> BusError? in
            do {
                while true { try await bus.post(name: "p.x") }
            } catch {
                return error as? BusError
            }
        }
        // A real signal that the queue is full: postNow refuses.
        let name = NotificationName("p.x")
        var full = false
        while !full {
            do {
                try bus.postNow(name: name)
            } catch {
                #expect(error == .outboundQueueFull(capacity: 2))
                full = true
            }
            await Task.yield()
        }
        posting.cancel()
        #expect(await posting.value(within: .seconds(30)) == .cancelled)
        withExtendedLifetime(stalled) {}
        await bus.close()
    }

    @Test("Waiting from an already cancelled task is .cancelled at once, not a timeout")
    func waitFromCancelledTask() async throws {
        let bus = try Bus(.embedded())
        let subscription = try bus.notifications(named: "w.>")
        let name = NotificationName("w.x")
        let outcome = await Task { () async -> BusError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                try await bus.waitForSubscribers(count: 5, matching: name, timeout: .seconds(30))
                return nil
            } catch {
                return error as? BusError
            }
        }.value
        #expect(outcome == .cancelled)
        withExtendedLifetime(subscription) {}
        await bus.close()
    }

    @Test("A timeout of .seconds(Int64.max) waits (no overflow trap); a negative one times out at once, under a second too")
    func extremeTimeouts() async throws {
        let bus = try Bus(.embedded())
        let name = NotificationName("t.x")
        let forever = Task { () async -> BusError? in
            do {
                try await bus.waitForSubscribers(count: 5, matching: name, timeout: .seconds(Int64.max))
                return nil
            } catch {
                return error as? BusError
            }
        }
        forever.cancel()
        #expect(await forever.value(within: .seconds(30)) == .cancelled)
        await #expect(throws: BusError.timedOut(what: "5 subscriber(s) of t.x", after: .milliseconds(0))) {
            try await bus.waitForSubscribers(count: 5, matching: name, timeout: .seconds(-5))
        }
        // Under a second, a negative Duration's seconds are 0 and its attoseconds negative: this
        // trapped ("Negative value is not representable") when request's time left went below zero.
        await #expect(throws: BusError.timedOut(what: "5 subscriber(s) of t.x", after: .milliseconds(0))) {
            try await bus.waitForSubscribers(count: 5, matching: name, timeout: .milliseconds(-50))
        }
        await bus.close()
    }

    @Test("A configuration value out of range is an error naming it, not a crash at close")
    func invalidConfiguration() throws {
        var configuration = BusConfiguration.embedded()
        configuration.closeTimeout = .milliseconds(-1)
        #expect(throws: BusError.invalidConfiguration("closeTimeout must not be negative, not \(Duration.milliseconds(-1))")) {
            try Bus(configuration)
        }
        configuration = .embedded()
        configuration.outboundCapacity = 0
        #expect(throws: BusError.self) { try Bus(configuration) }
        // NBP-1 §2.3: batches no larger than every receiver accepts, whatever its maximum payload.
        configuration = .embedded()
        configuration.batching = Batching(maximumFrameBytes: WireFormat.maximumBatchFrame + 1)
        #expect(
            throws: BusError.invalidConfiguration(
                "batching.maximumFrameBytes must be at most 1052960 (NBP-1's largest batch frame), not 1052961")
        ) { try Bus(configuration) }
        configuration.batching = Batching(maximumFrameBytes: WireFormat.maximumBatchFrame)
        try configuration.validate()
        // The kernel's receive buffer: 1 KiB to 1 GiB, or nil (the system's).
        for bytes in [0, 1_023, (1 << 30) + 1, -1] {
            configuration = .embedded()
            configuration.receiveBufferBytes = bytes
            #expect(
                throws: BusError.invalidConfiguration(
                    "receiveBufferBytes must be 1 KiB to 1 GiB (nil: the system's), not \(bytes)")
            ) { try configuration.validate() }
        }
        for bytes in [1_024, 128 << 10, 1 << 30] as [Int?] + [nil] {
            configuration.receiveBufferBytes = bytes
            try configuration.validate()
        }
        // Heartbeat settings outside the range they have always had: under a millisecond, or past
        // 6,553 s (the range ZMTP heartbeats took, kept when TCP keepalive replaced them).
        for (interval, timeout) in [(Duration.microseconds(500), Duration.seconds(15)), (.seconds(5), .seconds(7_000))] {
            configuration = .embedded()
            configuration.heartbeatInterval = interval
            configuration.heartbeatTimeout = timeout
            #expect {
                try Bus(configuration)
            } throws: { error in
                guard let error = error as? BusError, error.code == .invalidConfiguration, let text = error.reason else { return false }
                return text.hasPrefix("heartbeat")
            }
        }
        #expect(throws: BusError.self) {
            var configuration = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
            configuration.heartbeat = .seconds(2_185)
            _ = try Broker(configuration)
        }
    }

    @Test("Headers forget an oversized value once it is replaced or removed")
    func oversizedHeaderValueForgotten() async throws {
        let bus = try Bus(.embedded())
        var headers = NotificationHeaders()
        headers["big"] = String(repeating: "v", count: 70_000)
        await #expect(throws: BusError.self) { try await bus.post(name: "h.x", headers: headers) }
        headers["big"] = nil
        #expect(headers == NotificationHeaders() && headers.isEmpty)
        try await bus.post(name: "h.x", headers: headers)
        headers["k"] = "v"
        headers["k"] = String(repeating: "v", count: 70_000)
        await #expect(throws: BusError.self) { try await bus.post(name: "h.x", headers: headers) }
        headers["k"] = "w"
        #expect(headers == ["k": "w"])
        try await bus.post(name: "h.x", headers: headers)
        await bus.close()
    }

    @Test("events(named:) and addObserver(forName:) take a pattern as text too")
    func textPatterns() async throws {
        let bus = try Bus(.embedded())
        let events = try bus.events(named: "e.>")
        let observed = EventLog<String>()
        let token = try bus.addObserver(forName: "e.>") { observed.append($0.name.rawValue) }
        try await bus.post(name: "e.x")
        let received = await events.collect {
            if case .notification = $0 { return true }
            return false
        }
        guard case .notification(let notification)? = received.last else {
            Issue.record("events(named: \"e.>\") gave no notification: \(received)")
            return
        }
        #expect(notification.name.rawValue == "e.x")
        #expect(await observed.wait(count: 1) == ["e.x"])
        #expect(throws: BusError.self) { try bus.events(named: "e..bad") }
        token.cancel()
        await bus.close()
    }
}
