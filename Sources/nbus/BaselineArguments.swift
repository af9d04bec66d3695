import ArgumentParser

/// The baseline option `bench views`, `bench sweep` and `demo` share.
struct BaselineArguments: ParsableArguments {
    @Option(
        name: .customLong("baseline-seconds"),
        parsing: .unconditional, help: """
            Seconds of each baseline run first, in the same invocation: raw libzmq PUB/SUB (nbus-baseline, \
            at the scenario's transport, rate and payload) and Foundation NotificationCenter in-process. 0: none.
            """)
    var baselineSeconds: Double = 2

    func validate() throws {
        try SecondsOption.check(baselineSeconds, "--baseline-seconds", in: 0...600)
    }
}
