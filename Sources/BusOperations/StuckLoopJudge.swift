/// Whether a broker's forwarding loop is stuck, judged at each wake-up of the watchdog that asks
/// (`nbus broker --stuck-exit`): stuck when it has begun no round for `limit` of the time this
/// process was running.
///
/// Not of the time on the clock: a process stopped by SIGSTOP (a debugger, `docker pause`, a frozen
/// VM or cgroup) and resumed finds every clock advanced by the pause. Measured by the clock alone,
/// a broker frozen for 10 s with `--stuck-exit 10` exited with status 70 as it resumed whenever the
/// watchdog ran before the loop's next round (2 runs of 36 of `Benchmarks/redundant-brokers.sh`'s
/// freeze, so the publisher lost that broker for good). The watchdog sees a pause as a wake-up far
/// later than it asked for; what it overslept is excused until the loop's next round.
package struct StuckLoopJudge: Sendable, Equatable {
    package let limit: Duration
    /// How late a wake-up may be before the lateness counts as a pause: a busy machine delays a
    /// wake-up by tens of milliseconds; a second means this process was not running.
    package static let pauseThreshold = Duration.seconds(1)

    /// Time this process was not running since the loop's last round.
    private(set) var excused = Duration.zero
    /// The loop's age at the last wake-up: a smaller one means it began a round since.
    private var lastAge: Duration?

    package init(limit: Duration) { self.limit = limit }

    package enum Verdict: Equatable, Sendable {
        /// The loop ran recently enough, or the time it did not is excused.
        case running
        /// Stuck for `age` of running time (the loop's age less the pauses): exit.
        case stuck(age: Duration)
        /// The loop has stopped (the broker is closing): nothing to judge.
        case stopped
    }

    /// One wake-up: `loopAge` is `Broker.forwardingLoopAge()` (nil once stopped), `overslept` how
    /// much later than asked the watchdog woke.
    package mutating func wokeUp(loopAge: Duration?, overslept: Duration) -> Verdict {
        guard let age = loopAge else {
            (excused, lastAge) = (.zero, nil)
            return .stopped
        }
        if let lastAge, age < lastAge { excused = .zero }
        lastAge = age
        if overslept >= Self.pauseThreshold { excused += overslept }
        let running = age - excused
        return running > limit ? .stuck(age: running) : .running
    }
}
