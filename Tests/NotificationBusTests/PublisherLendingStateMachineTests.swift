import Testing

@testable import NotificationBus

// The XPUB lending driven by hand (no sockets, the clock a number): every state meets every
// input, and each row names the transition it checks.

private typealias Lending = PublisherLendingStateMachine

/// One input, with the facts its caller gives.
private enum Input: CustomStringConvertible {
    case lend
    case claim(now: UInt64, queueEmpty: Bool)
    case release(Lending.SendOutcome, inputWaiting: Bool, queueEmpty: Bool, loopSleeping: Bool)
    case reclaim
    case close

    var description: String {
        switch self {
        case .lend: "lend"
        case .claim(let now, let queueEmpty): "claim(now: \(now), queueEmpty: \(queueEmpty))"
        case .release(let outcome, let input, let queueEmpty, let sleeping):
            "release(\(outcome), inputWaiting: \(input), queueEmpty: \(queueEmpty), loopSleeping: \(sleeping))"
        case .reclaim: "reclaim"
        case .close: "close"
        }
    }
}

/// What an input returned, whichever input it was.
private enum Output: Equatable {
    case lend(Lending.LendAction)
    case claim(Lending.ClaimAction)
    case release(Lending.ReleaseAction)
    case reclaim(Lending.ReclaimAction)
    case close(Lending.CloseAction)
}

/// When the state was entered; a claim at `late` is far enough from every earlier release.
private let start: UInt64 = 1_000_000
private let late: UInt64 = 10_000_000

extension Lending {
    fileprivate mutating func apply(_ input: Input, now: UInt64 = late) -> Output {
        switch input {
        case .lend: .lend(lend())
        case .claim(let now, let queueEmpty): .claim(claim(now: now, queueEmpty: queueEmpty))
        case .release(let outcome, let input, let queueEmpty, let sleeping):
            .release(release(outcome, now: now, inputWaiting: input, queueEmpty: queueEmpty, loopSleeping: sleeping))
        case .reclaim: .reclaim(reclaim())
        case .close: .close(close())
        }
    }

    /// A machine brought to `state` through its inputs only.
    fileprivate static func reaching(_ state: State) -> Lending {
        var machine = Lending()
        switch state {
        case .loop: break
        case .lent: _ = machine.lend()
        case .poster:
            _ = machine.lend()
            _ = machine.claim(now: start, queueEmpty: true)
        case .closed: _ = machine.close()
        }
        #expect(machine.state == state)
        return machine
    }
}

private struct Transition: CustomTestStringConvertible, Sendable {
    let name: String
    let from: Lending.State
    let input: Input
    let output: Output
    let to: Lending.State

    var testDescription: String { "\(from) --\(input)--> \(to): \(name)" }
}

private let transitions: [Transition] = [
    // The loop holds it (awake).
    Transition(name: "the loop parks: it lends the socket", from: .loop, input: .lend, output: .lend(.lent), to: .lent),
    Transition(
        name: "a post while the loop is awake goes through the queue", from: .loop,
        input: .claim(now: late, queueEmpty: true), output: .claim(.queue), to: .loop),
    Transition(name: "an awake loop reclaims what it holds", from: .loop, input: .reclaim, output: .reclaim(.taken), to: .loop),
    Transition(name: "closing: the loop takes it for good", from: .loop, input: .close, output: .close(.close), to: .closed),
    Transition(
        name: "a stray release lends nothing the loop holds", from: .loop,
        input: .release(.sent, inputWaiting: false, queueEmpty: true, loopSleeping: false), output: .release(.done), to: .loop),

    // Lent (the loop sleeps).
    Transition(
        name: "a post to an empty queue takes the lent socket", from: .lent,
        input: .claim(now: late, queueEmpty: true), output: .claim(.sendDirectly), to: .poster),
    Transition(
        name: "a post behind queued ones is queued (it must not overtake them)", from: .lent,
        input: .claim(now: late, queueEmpty: false), output: .claim(.queue), to: .lent),
    Transition(name: "the loop woke: it takes the socket back", from: .lent, input: .reclaim, output: .reclaim(.taken), to: .loop),
    Transition(name: "lending twice lends nothing", from: .lent, input: .lend, output: .lend(.notHeld), to: .lent),
    Transition(name: "closing while lent takes it for good", from: .lent, input: .close, output: .close(.close), to: .closed),
    Transition(
        name: "a stray release keeps it lent", from: .lent,
        input: .release(.sent, inputWaiting: false, queueEmpty: true, loopSleeping: true), output: .release(.done), to: .lent),

    // A poster sends on it.
    Transition(
        name: "a second post while one is sent is queued", from: .poster,
        input: .claim(now: late, queueEmpty: true), output: .claim(.queue), to: .poster),
    Transition(
        name: "the loop woke during a send: it waits the send out", from: .poster, input: .reclaim,
        output: .reclaim(.waitForPoster), to: .poster),
    Transition(
        name: "closing during a send waits the send out", from: .poster, input: .close, output: .close(.waitForPoster),
        to: .poster),
    Transition(name: "the loop cannot lend what a poster holds", from: .poster, input: .lend, output: .lend(.notHeld), to: .poster),
    Transition(
        name: "sent, the loop sleeps with nothing new: nobody is woken", from: .poster,
        input: .release(.sent, inputWaiting: false, queueEmpty: true, loopSleeping: true), output: .release(.done), to: .lent),
    Transition(
        name: "sent, the loop is awake: it sees what is new itself", from: .poster,
        input: .release(.sent, inputWaiting: true, queueEmpty: false, loopSleeping: false), output: .release(.done),
        to: .lent),
    Transition(
        name: "sent, input waiting (the send took the ZMQ_FD signal): the sleeping loop is woken", from: .poster,
        input: .release(.sent, inputWaiting: true, queueEmpty: true, loopSleeping: true), output: .release(.wakeLoop),
        to: .lent),
    Transition(
        name: "sent, posts queued meanwhile: the sleeping loop is woken", from: .poster,
        input: .release(.sent, inputWaiting: false, queueEmpty: false, loopSleeping: true), output: .release(.wakeLoop),
        to: .lent),
    Transition(
        name: "refused (back-pressure), loop asleep: requeued first, the loop woken", from: .poster,
        input: .release(.refused, inputWaiting: false, queueEmpty: true, loopSleeping: true),
        output: .release(.requeue(wakeLoop: true)), to: .lent),
    Transition(
        name: "refused, loop awake: requeued first, no wake-up", from: .poster,
        input: .release(.refused, inputWaiting: false, queueEmpty: true, loopSleeping: false),
        output: .release(.requeue(wakeLoop: false)), to: .lent),
    Transition(
        name: "rejected outright: counted, nothing for the loop", from: .poster,
        input: .release(.rejected, inputWaiting: false, queueEmpty: true, loopSleeping: true), output: .release(.done),
        to: .lent),
    Transition(
        name: "rejected, input waiting: the sleeping loop is woken", from: .poster,
        input: .release(.rejected, inputWaiting: true, queueEmpty: true, loopSleeping: true), output: .release(.wakeLoop),
        to: .lent),

    // Closed: never lent again.
    Transition(name: "closed: nothing to lend", from: .closed, input: .lend, output: .lend(.notHeld), to: .closed),
    Transition(
        name: "closed: every post is queued (and refused by the closing bus)", from: .closed,
        input: .claim(now: late, queueEmpty: true), output: .claim(.queue), to: .closed),
    Transition(name: "closed: the loop holds it", from: .closed, input: .reclaim, output: .reclaim(.taken), to: .closed),
    Transition(name: "closing twice is closing", from: .closed, input: .close, output: .close(.close), to: .closed),
    Transition(
        name: "a stray release opens nothing closed", from: .closed,
        input: .release(.sent, inputWaiting: true, queueEmpty: true, loopSleeping: false), output: .release(.done), to: .closed),
]

@Suite("PublisherLendingStateMachine: who uses the XPUB, the loop or a posting thread")
struct PublisherLendingStateMachineTests {
    @Test("Every transition", arguments: transitions)
    fileprivate func transition(_ row: Transition) {
        var machine = Lending.reaching(row.from)
        #expect(machine.apply(row.input) == row.output)
        #expect(machine.state == row.to)
    }

    @Test("Every state meets every input in the table")
    func tableIsComplete() {
        let states: [Lending.State] = [.loop, .lent, .poster, .closed]
        func kind(_ input: Input) -> String {
            switch input {
            case .lend: "lend"
            case .claim: "claim"
            case .release: "release"
            case .reclaim: "reclaim"
            case .close: "close"
            }
        }
        for state in states {
            let inputs = Set(transitions.filter { $0.from == state }.map { kind($0.input) })
            let expected: Set<String> = ["lend", "claim", "release", "reclaim", "close"]
            #expect(inputs.isSuperset(of: expected), "\(state) misses \(expected.subtracting(inputs))")
        }
    }

    @Test("Posts closer together than directSendSpacing after a direct send go through the queue")
    func spacing() {
        var machine = Lending.reaching(.poster)
        #expect(machine.release(.sent, now: start, inputWaiting: false, queueEmpty: true, loopSleeping: true) == .done)
        #expect(machine.lastRelease == start)
        #expect(machine.claim(now: start + Lending.directSendSpacing, queueEmpty: true) == .queue)
        #expect(machine.state == .lent)
        #expect(machine.claim(now: start + Lending.directSendSpacing + 1, queueEmpty: true) == .sendDirectly)
        #expect(machine.state == .poster)
        // A refused send restarts the spacing too: the loop takes the burst over.
        #expect(
            machine.release(.refused, now: late, inputWaiting: false, queueEmpty: true, loopSleeping: true)
                == .requeue(wakeLoop: true))
        #expect(machine.claim(now: late + 1, queueEmpty: true) == .queue)
    }

    @Test("Direct sends are counted: sent ones as sent, rejected ones as unsent, refused ones not (the loop sends them)")
    func counts() {
        var machine = Lending.reaching(.lent)
        let outcomes: [Lending.SendOutcome] = [.sent, .sent, .rejected, .refused, .sent]
        var now = start
        for outcome in outcomes {
            now += 2 * Lending.directSendSpacing
            #expect(machine.claim(now: now, queueEmpty: true) == .sendDirectly)
            _ = machine.release(outcome, now: now, inputWaiting: false, queueEmpty: true, loopSleeping: true)
        }
        #expect(machine.sent == 3)
        #expect(machine.unsent == 1)
    }

    @Test("Lent with an allowance (a binding publisher's headroom): direct sends go until their wire bytes reach it")
    func allowance() {
        var machine = Lending()
        #expect(machine.lend(allowance: 10_000) == .lent)
        var now = start
        var sentDirectly = 0
        for _ in 0..<5 {
            now += 2 * Lending.directSendSpacing
            guard machine.claim(now: now, queueEmpty: true) == .sendDirectly else { break }
            _ = machine.release(.sent, now: now, inputWaiting: false, queueEmpty: true, loopSleeping: true, bytes: 4_009)
            sentDirectly += 1
        }
        // 0, 4,009 and 8,018 bytes sent before each of the first three, under 10,000: they go (the
        // third past the allowance, as the broker's last frame before a look); the fourth queues.
        #expect(sentDirectly == 3 && machine.sentBytes == 3 * 4_009)
        #expect(machine.reclaim() == .taken)
        // Lent again with none left (the loop holds back for a subscriber past its budget it does
        // not lend; lent with 0 it would queue every post too).
        #expect(machine.lend(allowance: 0) == .lent)
        #expect(machine.claim(now: now + 2 * Lending.directSendSpacing, queueEmpty: true) == .queue)
        #expect(machine.reclaim() == .taken)
        // Without an allowance, no limit.
        #expect(machine.lend() == .lent)
        #expect(machine.claim(now: now + 4 * Lending.directSendSpacing, queueEmpty: true) == .sendDirectly)
    }

    @Test("A whole cycle: lend, one direct send, a second post queued meanwhile, reclaim, close")
    func cycle() {
        var machine = Lending()
        #expect(machine.claim(now: start, queueEmpty: true) == .queue, "the loop holds it at first")
        #expect(machine.lend() == .lent)
        #expect(machine.claim(now: start, queueEmpty: true) == .sendDirectly)
        #expect(machine.claim(now: start, queueEmpty: true) == .queue, "one poster at a time")
        #expect(machine.reclaim() == .waitForPoster)
        #expect(machine.release(.sent, now: start, inputWaiting: false, queueEmpty: false, loopSleeping: true) == .wakeLoop)
        #expect(machine.reclaim() == .taken)
        #expect(machine.state == .loop)
        #expect(machine.close() == .close)
        #expect(machine.lend() == .notHeld)
        #expect(machine.claim(now: late, queueEmpty: true) == .queue)
        #expect(machine.sent == 1 && machine.unsent == 0)
    }
}
