import BusOperations
import Testing

private func ms(_ value: Int) -> Duration { .milliseconds(value) }

@Suite("StuckLoopJudge: a stuck forwarding loop, not a paused process")
struct StuckLoopJudgeTests {
    typealias Step = (age: Duration?, overslept: Duration, verdict: StuckLoopJudge.Verdict)

    @Test(
        "each wake-up's verdict",
        arguments: [
            // The loop begins rounds: never stuck.
            ("rounds", [(ms(300), ms(0), .running), (ms(100), ms(20), .running), (ms(900), ms(0), .running)]),
            // No round for past the limit, the watchdog on time: stuck.
            ("stuck", [(ms(9_800), ms(0), .running), (ms(10_050), ms(0), .stuck(age: ms(10_050)))]),
            // SIGSTOP for 10 s at an age of 0.2 s: the wake-up 10 s late, the age 10.2 s: not stuck.
            ("paused", [(ms(200), ms(0), .running), (ms(10_450), ms(10_000), .running), (ms(100), ms(0), .running)]),
            // Paused, then truly stuck: the pause excused, not the rest.
            (
                "paused then stuck",
                [(ms(200), ms(0), .running), (ms(10_450), ms(10_000), .running), (ms(19_000), ms(0), .running),
                 (ms(20_500), ms(0), .stuck(age: ms(10_500)))]
            ),
            // A round after a pause ends its excuse: a later stall is judged from that round.
            (
                "excuse ends at the next round",
                [(ms(10_450), ms(10_000), .running), (ms(50), ms(0), .running), (ms(10_100), ms(0), .stuck(age: ms(10_100)))]
            ),
            // A busy machine's late wake-ups (under the threshold) excuse nothing.
            ("late, not paused", [(ms(5_000), ms(900), .running), (ms(10_100), ms(900), .stuck(age: ms(10_100)))]),
            // A stopped loop (the broker closing) is never stuck, and forgets the past.
            ("stopped", [(ms(10_450), ms(10_000), .running), (nil, ms(0), .stopped), (ms(10_200), ms(0), .stuck(age: ms(10_200)))]),
        ] as [(String, [Step])])
    func verdicts(_ name: String, _ steps: [Step]) {
        var judge = StuckLoopJudge(limit: .seconds(10))
        for (index, step) in steps.enumerated() {
            #expect(judge.wokeUp(loopAge: step.age, overslept: step.overslept) == step.verdict, "\(name), step \(index)")
        }
    }
}
