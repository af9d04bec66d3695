import Foundation
import Testing
@testable import NotificationBus
import TestSupport

@Suite("Bus lifecycle", .serialized, .timeLimit(.minutes(2)))
struct BusLifecycleTests {
    private func openFileDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    private func threads() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count
    }

    @Test("Opening and closing 1,000 buses leaks no thread and no file descriptor")
    func noLeaks() async throws {
        // Warm up once so lazily created runtime threads are not counted as leaks.
        await (try Bus(.embedded())).close()
        let fdsBefore = try openFileDescriptors()
        let threadsBefore = try threads()
        for _ in 0..<1_000 {
            let bus = try Bus(.embedded())
            let stream = try bus.notifications(named: "x.>")
            _ = stream
            await bus.close()
        }
        // Other suites run in parallel in this process and open their own descriptors and threads
        // meanwhile (the security and end-to-end suites hold hundreds at times); a leak here would
        // be per bus, 1,000 or more (each bus has an eventfd and a ZeroMQ context's fds).
        #expect(try openFileDescriptors() <= fdsBefore + 300)
        #expect(try threads() <= threadsBefore + 100)
    }

    @Test("The I/O thread is named nbus-io, so top -H and perf can tell it from Dispatch's workers")
    func ioThreadIsNamed() async throws {
        let bus = try Bus(.embedded())
        // Jobs on `bus.executor` run on the I/O thread: read that thread's own name there.
        let name = try await Task(executorPreference: bus.executor) {
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        }.value
        await bus.close()
        #expect(name.trimmingCharacters(in: .whitespacesAndNewlines) == "nbus-io")
    }

    @Test("Binding an endpoint in use fails with a typed transport error")
    func bindInUse() async throws {
        let first = try Bus(.directPublisher(bind: "tcp://127.0.0.1:*"))
        let endpoint = try #require(first.endpoints.first)
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        do {
            _ = try Bus(.directPublisher(bind: endpoint))
            Issue.record("second bind succeeded")
        } catch {
            if let zmq = error.transportError {
                #expect(zmq.kind == .addressInUse)
            } else {
                Issue.record("unexpected \(error)")
            }
        }
        await first.close()
    }

    @Test("ready() times out with a clear error when no publisher answers")
    func readyTimesOut() async throws {
        let bus = try Bus(.directSubscriber(connect: [try temporaryIPCEndpoint()]))
        let subscription = try bus.notifications(named: "a")
        await #expect(throws: BusError.timedOut(what: "a publisher to confirm a", after: .milliseconds(200))) {
            try await bus.ready(NamePattern("a"), timeout: .milliseconds(200))
        }
        // ready(_:) for names no subscription can receive is an error, not a confirmation.
        await #expect(throws: BusError.notSubscribed(NamePattern("never.subscribed.>"))) {
            try await bus.ready(NamePattern("never.subscribed.>"), timeout: .milliseconds(200))
        }
        withExtendedLifetime(subscription) {}
        await bus.close()
    }

    @Test("Dropping every copy of a sequence unsubscribes")
    func droppingSequenceUnsubscribes() async throws {
        let bus = try Bus(.embedded())
        let name = NotificationName("drop.me")
        do {
            let stream = try bus.notifications(named: "drop.>")
            _ = stream
            try await bus.waitForSubscribers(count: 1, matching: name)
        }
        try await bus.waitForNoSubscribers(matching: name)
        #expect(bus.stats.activeSubscriptions == 0)
        await bus.close()
    }

    @Test("An observer runs on its own isolation and stops when its token is cancelled")
    func observerOnMainActor() async throws {
        let bus = try Bus(.embedded())
        let seen = Gate()
        let token = try bus.addObserver(forName: NamePattern("obs.>")) { @MainActor notification in
            MainActor.assertIsolated()
            if notification.name.rawValue == "obs.b" { seen.fire() }
        }
        try await bus.ready(NamePattern("obs.>"))
        try await bus.post(name: "obs.a")
        try await bus.post(name: "obs.b")
        await seen.wait()
        #expect(token.stats.delivered == 2)
        token.cancel()
        try await bus.waitForNoSubscribers(matching: NotificationName("obs.a"))
        await bus.close()
    }
}
