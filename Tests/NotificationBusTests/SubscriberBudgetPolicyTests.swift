import Testing
import ZeroMQ

@testable import NotificationBus

// A binding publisher's per-subscriber budget, socket-free: the connections' samples, the
// refusals and the clock go in as a table of steps; what comes out is each step's decision and
// which connections were disconnected.
@Suite("SubscriberBudgetPolicy (socket-free, table of steps)")
struct SubscriberBudgetPolicyTests {
    static let stopped = ConnectionDescriptor(7)
    static let moving = ConnectionDescriptor(9)
    static let ms: UInt64 = 1_000_000
    static let mib: UInt64 = 1 << 20

    /// One step: at `at` ms, either the socket refused the head frame (`refused`) or took frames
    /// (`accepted`) or the watch looks (`watch`, after `sent` MiB in all); the connections as
    /// sampled then (descriptor 7's progress, descriptor 9's; nil: not connected); what is expected.
    enum Input { case refused, accepted, watch(sentMiB: UInt64) }
    enum Expected: Equatable {
        case retry(waitBegan: Bool)
        case sendPast(episodeStarted: Bool)
        case nothing
    }
    struct Step {
        let at: UInt64
        let input: Input
        let stoppedProgress: UInt64?
        let movingProgress: UInt64?
        let expected: Expected
        let disconnected: [ConnectionDescriptor]
    }

    /// Runs the steps against one policy (budget 8 MiB, patience 500 ms) and checks each.
    func run(_ steps: [Step], budget: Int = 8 << 20, sourceLocation: SourceLocation = #_sourceLocation) {
        var policy = SubscriberBudgetPolicy(budget: budget, patienceNanoseconds: 500 * Self.ms)
        var gone: Set<ConnectionDescriptor> = []
        for (index, step) in steps.enumerated() {
            var samples: [ConnectionDescriptor: ConnectionSample] = [:]
            if let progress = step.stoppedProgress, !gone.contains(Self.stopped) {
                samples[Self.stopped] = ConnectionSample(unsentBytes: 65_536, progress: progress)
            }
            if let progress = step.movingProgress { samples[Self.moving] = ConnectionSample(unsentBytes: 65_536, progress: progress) }
            var disconnected: [ConnectionDescriptor] = []
            let disconnect = { (descriptor: ConnectionDescriptor, _: Int) -> Bool in
                disconnected.append(descriptor)
                gone.insert(descriptor)
                return true
            }
            let now = step.at * Self.ms
            var outcome = Expected.nothing
            switch step.input {
            case .refused:
                // The actions carried out as `SubscriberBudgetSide` carries them out.
                var action = policy.refused(now: now)
                if case .findStalled = action {
                    let ended = policy.stalled(in: samples).filter { disconnect($0, samples[$0]?.unsentBytes ?? 0) }
                    ended.forEach { policy.ended($0) }
                    action = policy.stalledFound(disconnected: ended.count, samples: samples, now: now)
                }
                switch action {
                case .retry(let began, let takeBaseline):
                    if takeBaseline { policy.beginWait(samples) }
                    outcome = .retry(waitBegan: began)
                case .sendPast(let started, _): outcome = .sendPast(episodeStarted: started)
                case .findStalled: Issue.record("findStalled asked twice", sourceLocation: sourceLocation)
                }
            case .accepted:
                _ = policy.accepted(now: now)
            case .watch(let sent):
                if policy.lookIsDue(now: now, wireSent: sent * Self.mib) {
                    let actions = policy.look(samples, sent: sent * Self.mib, wireSent: sent * Self.mib, now: now)
                    for disconnection in actions.disconnect where disconnect(disconnection.descriptor, disconnection.unsentBytes) {
                        policy.ended(disconnection.descriptor)
                    }
                }
            }
            #expect(outcome == step.expected, "step \(index) at \(step.at) ms", sourceLocation: sourceLocation)
            #expect(disconnected == step.disconnected, "step \(index) at \(step.at) ms", sourceLocation: sourceLocation)
        }
    }

    @Test("a stopped subscriber past its budget is disconnected by the watch; nobody waited")
    func stoppedPastBudgetByTheWatch() {
        run([
            Step(at: 0, input: .watch(sentMiB: 0), stoppedProgress: 5, movingProgress: nil, expected: .nothing, disconnected: []),
            // Past the budget, not yet the patience: not yet.
            Step(at: 400, input: .watch(sentMiB: 9), stoppedProgress: 5, movingProgress: nil, expected: .nothing, disconnected: []),
            Step(at: 500, input: .watch(sentMiB: 9), stoppedProgress: 5, movingProgress: nil, expected: .nothing, disconnected: [Self.stopped]),
        ])
    }

    @Test("within its budget a stopped subscriber is never disconnected, however long")
    func stoppedWithinBudget() {
        run((0...50).map { Step(at: UInt64($0) * 200, input: .watch(sentMiB: 7), stoppedProgress: 5, movingProgress: nil, expected: .nothing, disconnected: []) })
    }

    @Test("a full queue: the frame is held for the patience, then the one that took nothing is disconnected and a new wait begins")
    func fullQueueOfAStoppedOne() {
        run([
            Step(at: 0, input: .refused, stoppedProgress: 5, movingProgress: nil, expected: .retry(waitBegan: true), disconnected: []),
            Step(at: 300, input: .refused, stoppedProgress: 5, movingProgress: nil, expected: .retry(waitBegan: false), disconnected: []),
            Step(at: 500, input: .refused, stoppedProgress: 5, movingProgress: nil, expected: .retry(waitBegan: false), disconnected: [Self.stopped]),
            Step(at: 501, input: .accepted, stoppedProgress: nil, movingProgress: nil, expected: .nothing, disconnected: []),
        ])
    }

    @Test("a slow but moving subscriber is waited for (flow control) up to 10 s, then sent past")
    func slowButMoving() {
        var steps = [Step(at: 0, input: .refused, stoppedProgress: nil, movingProgress: 1, expected: .retry(waitBegan: true), disconnected: [])]
        // Every patience it has moved: never disconnected, still waited for.
        for tick in 1..<20 {
            steps.append(Step(at: UInt64(tick) * 500, input: .refused, stoppedProgress: nil, movingProgress: UInt64(tick) + 1, expected: .retry(waitBegan: false), disconnected: []))
        }
        steps.append(Step(at: 10_000, input: .refused, stoppedProgress: nil, movingProgress: 100, expected: .sendPast(episodeStarted: true), disconnected: []))
        steps.append(Step(at: 10_001, input: .refused, stoppedProgress: nil, movingProgress: 100, expected: .sendPast(episodeStarted: false), disconnected: []))
        run(steps)
    }

    @Test("a frame taken ends the wait: a moving subscriber that makes room is never sent past")
    func roomMadeEndsTheWait() {
        run([
            Step(at: 0, input: .refused, stoppedProgress: nil, movingProgress: 1, expected: .retry(waitBegan: true), disconnected: []),
            Step(at: 400, input: .accepted, stoppedProgress: nil, movingProgress: 2, expected: .nothing, disconnected: []),
            Step(at: 450, input: .refused, stoppedProgress: nil, movingProgress: 2, expected: .retry(waitBegan: true), disconnected: []),
            Step(at: 900, input: .accepted, stoppedProgress: nil, movingProgress: 3, expected: .nothing, disconnected: []),
        ])
    }

    @Test("a stopped one and a moving one at once: the stopped one is cut, the moving one waited for")
    func stoppedAndMoving() {
        run([
            Step(at: 0, input: .refused, stoppedProgress: 5, movingProgress: 1, expected: .retry(waitBegan: true), disconnected: []),
            Step(at: 500, input: .refused, stoppedProgress: 5, movingProgress: 2, expected: .retry(waitBegan: false), disconnected: [Self.stopped]),
            Step(at: 1_000, input: .refused, stoppedProgress: nil, movingProgress: 3, expected: .retry(waitBegan: false), disconnected: []),
        ])
    }

    @Test("no progress readable for anyone: sent past after the patience, as the broker does")
    func nothingReadable() {
        var policy = SubscriberBudgetPolicy(budget: 8 << 20, patienceNanoseconds: 500 * Self.ms)
        let none: [ConnectionDescriptor: ConnectionSample] = [Self.stopped: ConnectionSample(unsentBytes: 4_096, progress: nil)]
        #expect(policy.refused(now: 0) == .retry(waitBegan: true, takeBaseline: true))
        policy.beginWait(none)
        #expect(policy.refused(now: 500 * Self.ms) == .findStalled)
        #expect(policy.stalled(in: none).isEmpty)
        #expect(policy.stalledFound(disconnected: 0, samples: none, now: 500 * Self.ms) == .sendPast(episodeStarted: true, since: 0))
    }

    @Test("the watches look ten times a second, not more, while nothing can be past its budget")
    func watchCadence() {
        var policy = SubscriberBudgetPolicy(budget: 8 << 20, patienceNanoseconds: 500 * Self.ms)
        var looks: [Bool] = []
        for at in [1_000, 1_050, 1_100] as [UInt64] {
            let due = policy.lookIsDue(now: at * Self.ms, wireSent: 0)
            looks.append(due)
            if due { _ = policy.look([:], sent: 0, wireSent: 0, now: at * Self.ms) }
        }
        #expect(looks == [true, false, true])
        let none = SubscriberBudgetPolicy(budget: 0, patienceNanoseconds: 500 * Self.ms)
        #expect(!none.lookIsDue(now: 1_000 * Self.ms, wireSent: 0))
        #expect(!none.mustHold(wireSent: 1 << 40))
    }
}
